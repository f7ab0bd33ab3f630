package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tarnhq/tarn/ui"
)

// consoleRoutes mounts the web console (package ui) under /ui. The
// console reads and acts only through this server's own handler, in
// process, with the signed-in principal's token, so its pages and
// buttons pass the same authentication and authorization (authorize)
// as any client; /ui itself is outside needsToken: the console signs
// its users in (ui/session.go). Its form posts are decoded by ui, which
// turns them into the management API's JSON requests.
func (s *Server) consoleRoutes(e *echo.Echo) {
	var topics ui.TopicLister
	if s.cfg.Topics != nil {
		topics = s.cfg.Topics
	}
	c, err := ui.New(ui.Config{API: e, Auth: s.cfg.Auth, Topics: topics, Logger: s.log})
	if err != nil {
		// The templates are embedded and parsed by every test: a failure
		// here is a bug in the build, not in the configuration.
		panic(err)
	}
	s.console = c
	h := echo.WrapHandler(c)
	e.GET(ui.Prefix, func(c echo.Context) error { return c.Redirect(http.StatusSeeOther, ui.Prefix+"/topics") })
	e.GET(ui.Prefix+"/*", h)
	e.HEAD(ui.Prefix+"/*", h)
	e.POST(ui.Prefix+"/*", h)
}

package server

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/tarnhq/tarn/ingest/topics"
)

// TopicManager is what the management API needs of ingest/topics'
// *Manager.
type TopicManager interface {
	Enable(ctx context.Context, cfg topics.TopicConfig) (topics.Status, error)
	List(ctx context.Context) []topics.Status
	Get(ctx context.Context, topic string) (topics.Status, error)
	Update(ctx context.Context, topic string, p topics.Patch) (topics.Status, error)
	Resume(ctx context.Context, topic string) (topics.Status, error)
	Disable(ctx context.Context, topic string, release bool) error
}

var _ TopicManager = (*topics.Manager)(nil)

// ListTopicsResponse is the body of GET /management/v1/topics.
type ListTopicsResponse struct {
	Topics []topics.Status `json:"topics"`
}

// managementRoutes registers the management API (Tarn's own, not part of
// the Iceberg REST spec; errors are ErrorModels all the same).
func (s *Server) managementRoutes(g *echo.Group) {
	idem := s.idempotent
	g.GET("/topics", s.listTopics)
	g.POST("/topics", s.enableTopic, idem)
	g.GET("/topics/:topic", s.getTopic)
	g.PATCH("/topics/:topic", s.updateTopic, idem)
	g.DELETE("/topics/:topic", s.disableTopic, idem)
	g.POST("/topics/:topic/resume", s.resumeTopic, idem)
	g.GET("/topics/:topic/dead-letters", s.topicDeadLetters)
	g.GET("/kafka/topics", s.brokerTopics)
}

// topicManager returns the manager, or 503 when serve runs without one.
func (s *Server) topicManager() (TopicManager, error) {
	if s.cfg.Topics == nil {
		return nil, echo.NewHTTPError(http.StatusServiceUnavailable, topics.ErrNotConfigured.Error())
	}
	return s.cfg.Topics, nil
}

// topicParam is the manager and the {topic} path parameter of a route on
// one topic. Errors: 503 without ingest, 400 for a bad parameter.
func (s *Server) topicParam(c echo.Context) (TopicManager, string, error) {
	m, err := s.topicManager()
	if err != nil {
		return nil, "", err
	}
	name, err := pathParam(c, "topic")
	return m, name, err
}

func (s *Server) listTopics(c echo.Context) error {
	m, err := s.topicManager()
	if err != nil {
		return err
	}
	list, err := s.visibleTopics(c, m.List(c.Request().Context()))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ListTopicsResponse{Topics: list})
}

func (s *Server) enableTopic(c echo.Context) error {
	m, err := s.topicManager()
	if err != nil {
		return err
	}
	cfg, err := requestBody[topics.TopicConfig](c)
	if err != nil {
		return err
	}
	st, err := m.Enable(c.Request().Context(), *cfg)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, st)
}

func (s *Server) getTopic(c echo.Context) error {
	m, name, err := s.topicParam(c)
	if err != nil {
		return err
	}
	st, err := m.Get(c.Request().Context(), name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, st)
}

// updateTopic serves PATCH: only topics.PatchFields may be sent (see
// topicPatch, which decodes the body).
func (s *Server) updateTopic(c echo.Context) error {
	m, name, err := s.topicParam(c)
	if err != nil {
		return err
	}
	p, err := requestBody[topics.Patch](c)
	if err != nil {
		return err
	}
	st, err := m.Update(c.Request().Context(), name, *p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, st)
}

// disableTopic serves DELETE [?release=true].
func (s *Server) disableTopic(c echo.Context) error {
	m, name, err := s.topicParam(c)
	if err != nil {
		return err
	}
	release := false
	if v := c.QueryParam("release"); v != "" {
		if release, err = strconv.ParseBool(v); err != nil {
			return fmt.Errorf("%w: release must be true or false, got %q", errBadRequest, v)
		}
	}
	if err := m.Disable(c.Request().Context(), name, release); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) resumeTopic(c echo.Context) error {
	m, name, err := s.topicParam(c)
	if err != nil {
		return err
	}
	st, err := m.Resume(c.Request().Context(), name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, st)
}

// BrokerLister is what GET /management/v1/kafka/topics needs of the
// topic manager (ingest/topics' *Manager).
type BrokerLister interface {
	BrokerTopics(ctx context.Context) ([]topics.BrokerTopic, error)
}

var _ BrokerLister = (*topics.Manager)(nil)

// BrokerTopicsResponse is the body of GET /management/v1/kafka/topics.
type BrokerTopicsResponse struct {
	Topics []topics.BrokerTopic `json:"topics"`
}

// brokerTopics lists the Kafka cluster's topics with the format each
// would be read in (topics.Manager.BrokerTopics), for the console's
// enable form. It names every topic of the cluster, so it needs manage
// on the catalog (authorize's default). Errors: 503 without ingest, 502
// when Kafka fails.
func (s *Server) brokerTopics(c echo.Context) error {
	m, err := s.topicManager()
	if err != nil {
		return err
	}
	bl, ok := m.(BrokerLister)
	if !ok {
		return echo.NewHTTPError(http.StatusServiceUnavailable, "this topic manager cannot list Kafka's topics")
	}
	list, err := bl.BrokerTopics(c.Request().Context())
	if err != nil {
		return err
	}
	if list == nil {
		list = []topics.BrokerTopic{}
	}
	return c.JSON(http.StatusOK, BrokerTopicsResponse{Topics: list})
}

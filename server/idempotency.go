package server

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/tarnhq/tarn/catalog"
)

// headerIdempotencyKey is the spec's Idempotency-Key request header.
const headerIdempotencyKey = "Idempotency-Key"

// idempotent implements Idempotency-Key on a mutating route (REST spec,
// components/parameters/idempotency-key): the first final response (2xx or
// terminal 4xx) is stored and replayed for the same key within the
// lifetime; 5xx are not stored, so a retry runs again. Concurrent requests
// with one key run one at a time. A key reused for another route or
// resource gets 422.
func (s *Server) idempotent(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		key := c.Request().Header.Get(headerIdempotencyKey)
		if key == "" || s.idem == nil {
			return next(c)
		}
		if _, err := uuid.Parse(key); err != nil {
			if len(key) > 64 {
				key = key[:64] + "..."
			}
			return fmt.Errorf("%w: Idempotency-Key must be a UUID, got %q", errBadRequest, key)
		}
		unlock := s.locks.lock(key)
		defer unlock()
		ctx := c.Request().Context()
		fingerprint := c.Request().Method + " " + c.Request().URL.EscapedPath()
		rec, ok, err := s.idem.LoadIdempotencyRecord(ctx, key, time.Now())
		if err != nil {
			return err
		}
		if ok {
			if rec.Fingerprint != fingerprint {
				return fmt.Errorf("%w: key %s was used for %s", catalog.ErrIdempotencyKeyReused, key, rec.Fingerprint)
			}
			idempotentReplaysTotal.Inc()
			if len(rec.Body) == 0 {
				return c.NoContent(rec.Status)
			}
			return c.Blob(rec.Status, rec.ContentType, rec.Body)
		}
		tee := &teeWriter{ResponseWriter: c.Response().Writer}
		c.Response().Writer = tee
		if err := next(c); err != nil {
			c.Error(err)
		}
		status := c.Response().Status
		if status >= 500 || status == http.StatusUnauthorized || status == http.StatusForbidden || status == 419 {
			return nil // not final: a retry may succeed
		}
		rec = catalog.IdempotencyRecord{
			Fingerprint:     fingerprint,
			Status:          status,
			ContentType:     c.Response().Header().Get(echo.HeaderContentType),
			Body:            tee.buf.Bytes(),
			ExpiresAtMillis: time.Now().Add(s.cfg.IdempotencyKeyLifetime).UnixMilli(),
		}
		if err := s.idem.SaveIdempotencyRecord(context.WithoutCancel(ctx), key, rec); err != nil {
			s.log.Error("store idempotency record", "key", key, "err", err)
		}
		return nil
	}
}

// expireIdempotencyKeys drops expired records every minute until ctx ends.
func (s *Server) expireIdempotencyKeys(ctx context.Context) {
	if s.idem == nil {
		return
	}
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if _, err := s.idem.ExpireIdempotencyRecords(ctx, now); err != nil && ctx.Err() == nil {
				s.log.Warn("expire idempotency records", "err", err)
			}
		}
	}
}

type teeWriter struct {
	http.ResponseWriter
	buf bytes.Buffer
}

func (t *teeWriter) Write(b []byte) (int, error) {
	t.buf.Write(b)
	return t.ResponseWriter.Write(b)
}

// keyedMutex serializes work per key; entries are dropped when unused.
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*keyedEntry
}

type keyedEntry struct {
	mu   sync.Mutex
	refs int
}

func (k *keyedMutex) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyedEntry{}
	}
	e := k.locks[key]
	if e == nil {
		e = &keyedEntry{}
		k.locks[key] = e
	}
	e.refs++
	k.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		k.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}

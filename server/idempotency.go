package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/internal/recovery"
	"github.com/tarnhq/tarn/internal/strictjson"
)

// headerIdempotencyKey is the spec's Idempotency-Key request header.
const headerIdempotencyKey = "Idempotency-Key"

// idempotent implements Idempotency-Key on a mutating route (REST spec,
// components/parameters/idempotency-key): the first final response (2xx or
// terminal 4xx) is stored and replayed for the same key within the
// lifetime; 5xx are not stored, so a retry runs again. Concurrent requests
// with one key run one at a time.
//
// A key names one request: its principal, method, route and path
// parameters, query and canonical body (requestFingerprint). The same key
// with any other request (another body, another table, another caller)
// is 422 UnprocessableEntityException, the spec's type for a well-formed
// request that cannot be processed, and the answer says nothing of the
// stored request or response. Keys compare as UUIDs: the spec's
// 36-character form, hex digits in either case. It runs after
// authorization, so a replay is only ever sent to a caller the route
// admits.
func (s *Server) idempotent(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		key := c.Request().Header.Get(headerIdempotencyKey)
		if key == "" || s.idem == nil {
			return next(c)
		}
		key, err := canonicalKey(key)
		if err != nil {
			return err
		}
		fingerprint, err := requestFingerprint(c)
		if err != nil {
			return err
		}
		unlock := s.locks.lock(key)
		defer unlock()
		ctx := c.Request().Context()
		rec, ok, err := s.idem.LoadIdempotencyRecord(ctx, key, time.Now())
		if err != nil {
			return err
		}
		if ok {
			if rec.Fingerprint != fingerprint {
				return fmt.Errorf("%w: Idempotency-Key %s was already used for a different request; use a new key for a new request", catalog.ErrIdempotencyKeyReused, key)
			}
			s.metrics.idempotentReplays.Inc()
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

// canonicalKey is an Idempotency-Key in one form: the spec's
// 36-character UUID text (8-4-4-4-12 hex digits), in lower case, so a
// client's upper-case retry (the spec's own example is upper case) is the
// same key. Other spellings uuid.Parse would take (braces, urn:uuid:, no
// hyphens) are refused, as the spec's schema (minLength and maxLength 36)
// does. Errors: 400.
func canonicalKey(key string) (string, error) {
	u, err := uuid.Parse(key)
	if err != nil || len(key) != 36 {
		if len(key) > 64 {
			key = key[:64] + "..."
		}
		return "", fmt.Errorf("%w: Idempotency-Key must be a UUID (36 characters, e.g. 017f22e2-79b0-7cc3-98c4-dc0c0c07398f), got %q", errBadRequest, key)
	}
	return u.String(), nil
}

// requestFingerprint identifies the request a key was first used for, as
// a SHA-256 in hex: the caller (issuer and principal; none under --auth
// none), the method, the route template with its decoded path
// parameters, the query parameters (sorted), and the body as
// strictjson.Canonical gives it (whitespace, member order and string
// escapes do not count; a route without a body has none). Fields are
// length-prefixed so no two requests share an encoding.
func requestFingerprint(c echo.Context) (string, error) {
	h := sha256.New()
	field := func(v string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(v)))
		h.Write(n[:])
		h.Write([]byte(v))
	}
	if id := identity(c); id != nil {
		field(id.Issuer)
		field(id.Principal)
	} else {
		field("")
		field("")
	}
	field(c.Request().Method)
	field(c.Path())
	for _, name := range c.ParamNames() {
		v, err := pathParam(c, name)
		if err != nil {
			return "", err
		}
		field(name)
		field(v)
	}
	field(c.QueryParams().Encode())
	if d, ok := c.Get(bodyContext).(*decodedBody); ok {
		body, err := strictjson.Canonical(d.raw)
		if err != nil {
			return "", fmt.Errorf("%w: malformed request body: %v", errBadRequest, err)
		}
		field(string(body))
	} else {
		field("")
	}
	return hex.EncodeToString(h.Sum(nil)), nil
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
			if err := s.metrics.panics.Call(recovery.Background, func() error { _, err := s.idem.ExpireIdempotencyRecords(ctx, now); return err }); err != nil && ctx.Err() == nil {
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

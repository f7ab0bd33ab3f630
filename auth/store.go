package auth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"

	"golang.org/x/crypto/bcrypt"
)

// RecordStore is what Store and LoadOrCreateKey need of the catalog's
// store: its records (catalog.RecordStore, the same seam ingest/topics
// uses), so the stores never import auth.
type RecordStore interface {
	PutRecord(ctx context.Context, collection, key string, value []byte) error
	CreateRecord(ctx context.Context, collection, key string, value []byte) ([]byte, bool, error)
	GetRecord(ctx context.Context, collection, key string) ([]byte, bool, error)
	ListRecords(ctx context.Context, collection string) (map[string][]byte, error)
	DeleteRecord(ctx context.Context, collection, key string) error
}

// Record collections.
const (
	collPrincipals = "auth-principals"
	collRoles      = "auth-roles"
	collGrants     = "auth-grants"
)

// DefaultBcryptCost is the bcrypt cost of stored secrets: the library's
// default (about 50 ms a check here), paid once per token request, not
// per catalog request.
const DefaultBcryptCost = bcrypt.DefaultCost

// maxSecretBytes is bcrypt's input limit; longer secrets are refused
// rather than silently truncated.
const maxSecretBytes = 72

// Principal is a stored principal as the API shows it (never the hash).
type Principal struct {
	ID string `json:"id"`
	// External principals have no secret: tokens of an external issuer
	// whose principal claim equals ID get the roles stored here.
	External  bool      `json:"external"`
	Root      bool      `json:"root,omitempty"`
	Roles     []string  `json:"roles"`
	CreatedAt time.Time `json:"created-at"`
}

type principalRecord struct {
	Principal
	SecretHash []byte `json:"secret-hash,omitempty"`
	// Generation is random, new on create and on every secret change
	// (rotate, root credential replaced): Tarn's tokens carry it as
	// "gen", and a token of another generation is refused, so that
	// rotating a secret or deleting and re-creating a principal ends
	// the tokens issued before.
	Generation string `json:"generation,omitempty"`
}

// newGeneration returns a fresh credential generation.
func newGeneration() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Role is a stored role.
type Role struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created-at"`
}

// RefreshInterval bounds how stale a Store's snapshot may be: a snapshot
// read longer ago is read again from the RecordStore before it is used.
// It is the bound within which a change made through another replica
// sharing the store (a deleted principal, a rotated secret, a revoked
// grant or role) takes effect on this one; a change made through this
// Store takes effect at once. 5 s keeps the cost at three record listings
// per replica per 5 s under load, and a revocation quicker than any
// token lifetime.
const RefreshInterval = 5 * time.Second

// snapshot is everything Store holds, decoded; replaced whole after a
// write, so readers never see a half-applied change.
type snapshot struct {
	// read is when the records were listed (before the first listing).
	read       time.Time
	principals map[string]principalRecord
	roles      map[string]Role
	grants     map[string][]Grant // by role
}

// Store keeps principals, roles and grants in a RecordStore, cached in
// memory for RefreshInterval: replicas sharing the store see each
// other's changes within that bound. Writes of one Store are serialized;
// writes through two replicas at once are each a read-modify-write of
// one record (the last one wins, as for any record).
type Store struct {
	rs         RecordStore
	bcryptCost int
	op         sync.Mutex // serializes writes (read-modify-write of records)
	loading    sync.Mutex // one listing at a time; others wait for its result
	mu         sync.Mutex // guards snap and writes
	snap       *snapshot
	// writes counts invalidations: a listing that began before a write
	// of this Store (and may miss it) is returned to its caller but not
	// kept, so the next load sees the write.
	writes uint64
	// now is time.Now (tests move it).
	now func() time.Time
}

// NewStore returns a Store over rs; bcryptCost 0 is DefaultBcryptCost.
func NewStore(rs RecordStore, bcryptCost int) *Store {
	if bcryptCost == 0 {
		bcryptCost = DefaultBcryptCost
	}
	return &Store{rs: rs, bcryptCost: bcryptCost, now: time.Now}
}

// loadRecords decodes every record of collection as a T (JSON) and hands
// it to each with its key. Errors: the store's, or a record that does not
// decode (named by what and key).
func loadRecords[T any](ctx context.Context, rs RecordStore, collection, what string, each func(key string, v T)) error {
	recs, err := rs.ListRecords(ctx, collection)
	if err != nil {
		return err
	}
	for k, raw := range recs {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("auth: %s %q: %w", what, k, err)
		}
		each(k, v)
	}
	return nil
}

// fresh returns the snapshot if it was read within RefreshInterval.
func (s *Store) fresh() *snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.snap != nil && s.now().Sub(s.snap.read) < RefreshInterval {
		return s.snap
	}
	return nil
}

// load returns the current snapshot, reading the records if it is
// missing or older than RefreshInterval. Concurrent callers share one
// listing.
func (s *Store) load(ctx context.Context) (*snapshot, error) {
	if snap := s.fresh(); snap != nil {
		return snap, nil
	}
	s.loading.Lock()
	defer s.loading.Unlock()
	if snap := s.fresh(); snap != nil {
		return snap, nil // read by the caller we waited for
	}
	s.mu.Lock()
	writes := s.writes
	s.mu.Unlock()
	snap := &snapshot{read: s.now(), principals: map[string]principalRecord{}, roles: map[string]Role{}, grants: map[string][]Grant{}}
	if err := loadRecords(ctx, s.rs, collPrincipals, "principal", func(k string, p principalRecord) { snap.principals[k] = p }); err != nil {
		return nil, err
	}
	if err := loadRecords(ctx, s.rs, collRoles, "role", func(k string, r Role) { snap.roles[k] = r }); err != nil {
		return nil, err
	}
	if err := loadRecords(ctx, s.rs, collGrants, "grant", func(_ string, g Grant) { snap.grants[g.Role] = append(snap.grants[g.Role], g) }); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.writes == writes {
		s.snap = snap
	}
	s.mu.Unlock()
	return snap, nil
}

// invalidate drops the cache after a write (called with op held).
func (s *Store) invalidate() {
	s.mu.Lock()
	s.snap = nil
	s.writes++
	s.mu.Unlock()
}

// Authorizer returns an Authorizer over the current grants. Errors: the
// store's.
func (s *Store) Authorizer(ctx context.Context) (Authorizer, error) {
	snap, err := s.load(ctx)
	if err != nil {
		return nil, err
	}
	return grantsAuthorizer{snap: snap}, nil
}

// ValidatePrincipalID checks a principal id: 1 to 256 printable
// characters, no colon (ids travel as id:secret) and no spaces.
// Errors: ErrInvalidArgument.
func ValidatePrincipalID(id string) error {
	if id == "" || len(id) > 256 {
		return fmt.Errorf("%w: principal id must be 1 to 256 characters", ErrInvalidArgument)
	}
	for _, r := range id {
		if r == ':' || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return fmt.Errorf("%w: principal id %q may not contain ':', spaces or control characters", ErrInvalidArgument, id)
		}
	}
	return nil
}

// ValidateRoleName checks a role name: 1 to 128 of [A-Za-z0-9._-].
// Errors: ErrInvalidArgument.
func ValidateRoleName(name string) error {
	ok := name != "" && len(name) <= 128
	for _, r := range name {
		if !(r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("._-", r))) {
			ok = false
		}
	}
	if !ok {
		return fmt.Errorf("%w: role name must be 1 to 128 of A-Z a-z 0-9 . _ -, got %q", ErrInvalidArgument, name)
	}
	return nil
}

// NewSecret returns a random client secret (32 bytes, base64url).
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (s *Store) hash(secret string) ([]byte, error) {
	if len(secret) == 0 || len(secret) > maxSecretBytes {
		return nil, fmt.Errorf("%w: a secret must be 1 to %d bytes", ErrInvalidArgument, maxSecretBytes)
	}
	return bcrypt.GenerateFromPassword([]byte(secret), s.bcryptCost)
}

func (s *Store) putPrincipal(ctx context.Context, p principalRecord) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	defer s.invalidate()
	return s.rs.PutRecord(ctx, collPrincipals, p.ID, b)
}

// CreatePrincipal stores a new principal and returns its secret (empty
// for an external one), which is shown once and kept only hashed.
// Errors: ErrInvalidArgument, ErrAlreadyExists.
func (s *Store) CreatePrincipal(ctx context.Context, id string, external bool) (secret string, err error) {
	if err := ValidatePrincipalID(id); err != nil {
		return "", err
	}
	s.op.Lock()
	defer s.op.Unlock()
	snap, err := s.load(ctx)
	if err != nil {
		return "", err
	}
	if _, ok := snap.principals[id]; ok {
		return "", fmt.Errorf("%w: principal %q", ErrAlreadyExists, id)
	}
	p := principalRecord{Principal: Principal{ID: id, External: external, Roles: []string{}, CreatedAt: time.Now().UTC()}, Generation: newGeneration()}
	if !external {
		secret = NewSecret()
		if p.SecretHash, err = s.hash(secret); err != nil {
			return "", err
		}
	}
	return secret, s.putPrincipal(ctx, p)
}

// EnsureRoot makes id the root principal with secret: created if
// missing, its secret replaced if it differs. With secret empty it only
// creates a missing root, with a generated secret it returns
// (generated true); an existing root keeps its secret. Errors:
// ErrInvalidArgument.
func (s *Store) EnsureRoot(ctx context.Context, id, secret string) (out string, generated bool, err error) {
	if err := ValidatePrincipalID(id); err != nil {
		return "", false, err
	}
	s.op.Lock()
	defer s.op.Unlock()
	snap, err := s.load(ctx)
	if err != nil {
		return "", false, err
	}
	p, exists := snap.principals[id]
	if secret == "" {
		for _, q := range snap.principals {
			if q.Root {
				return "", false, nil // some root exists: keep it
			}
		}
		secret, generated = NewSecret(), true
	} else if exists && p.Root && bcrypt.CompareHashAndPassword(p.SecretHash, []byte(secret)) == nil {
		return "", false, nil
	}
	if !exists {
		p = principalRecord{Principal: Principal{ID: id, Roles: []string{}, CreatedAt: time.Now().UTC()}}
	}
	p.Root, p.External = true, false
	if p.SecretHash, err = s.hash(secret); err != nil {
		return "", false, err
	}
	p.Generation = newGeneration() // tokens of the replaced credential end
	if err := s.putPrincipal(ctx, p); err != nil {
		return "", false, err
	}
	if generated {
		return secret, true, nil
	}
	return "", false, nil
}

// RotateSecret replaces a local principal's secret and returns the new
// one. Errors: ErrNotFound, ErrInvalidArgument (an external principal).
func (s *Store) RotateSecret(ctx context.Context, id string) (string, error) {
	s.op.Lock()
	defer s.op.Unlock()
	_, p, err := s.lookupPrincipal(ctx, id)
	if err != nil {
		return "", err
	}
	if p.External {
		return "", fmt.Errorf("%w: principal %q is external and has no secret", ErrInvalidArgument, id)
	}
	secret := NewSecret()
	if p.SecretHash, err = s.hash(secret); err != nil {
		return "", err
	}
	p.Generation = newGeneration() // tokens of the old secret end
	return secret, s.putPrincipal(ctx, p)
}

// lookupPrincipal returns the current snapshot and principal id in it.
// Errors: the store's; ErrNotFound.
func (s *Store) lookupPrincipal(ctx context.Context, id string) (*snapshot, principalRecord, error) {
	snap, err := s.load(ctx)
	if err != nil {
		return nil, principalRecord{}, err
	}
	p, ok := snap.principals[id]
	if !ok {
		return nil, principalRecord{}, fmt.Errorf("%w: principal %q", ErrNotFound, id)
	}
	return snap, p, nil
}

// DeletePrincipal removes a principal; its tokens stop working at once
// (Authenticate looks local principals up). The root cannot be deleted.
// Errors: ErrNotFound, ErrInvalidArgument.
func (s *Store) DeletePrincipal(ctx context.Context, id string) error {
	s.op.Lock()
	defer s.op.Unlock()
	_, p, err := s.lookupPrincipal(ctx, id)
	if err != nil {
		return err
	}
	if p.Root {
		return fmt.Errorf("%w: the root principal cannot be deleted", ErrInvalidArgument)
	}
	defer s.invalidate()
	return s.rs.DeleteRecord(ctx, collPrincipals, id)
}

// GetPrincipal returns one principal. Errors: ErrNotFound.
func (s *Store) GetPrincipal(ctx context.Context, id string) (Principal, error) {
	_, p, err := s.lookupPrincipal(ctx, id)
	if err != nil {
		return Principal{}, err
	}
	return p.Principal, nil
}

// ListPrincipals returns every principal, by id.
func (s *Store) ListPrincipals(ctx context.Context) ([]Principal, error) {
	snap, err := s.load(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Principal, 0, len(snap.principals))
	for _, p := range snap.principals {
		out = append(out, p.Principal)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// SetRole assigns (assign true) or unassigns role to a principal;
// idempotent. Errors: ErrNotFound (principal or role).
func (s *Store) SetRole(ctx context.Context, id, role string, assign bool) error {
	s.op.Lock()
	defer s.op.Unlock()
	snap, p, err := s.lookupPrincipal(ctx, id)
	if err != nil {
		return err
	}
	if _, ok := snap.roles[role]; !ok && assign {
		return fmt.Errorf("%w: role %q", ErrNotFound, role)
	}
	roles := slices.DeleteFunc(slices.Clone(p.Roles), func(r string) bool { return r == role })
	if assign {
		roles = append(roles, role)
		sort.Strings(roles)
	}
	p.Roles = roles
	return s.putPrincipal(ctx, p)
}

// CreateRole stores a new role. Errors: ErrInvalidArgument,
// ErrAlreadyExists.
func (s *Store) CreateRole(ctx context.Context, name string) error {
	if err := ValidateRoleName(name); err != nil {
		return err
	}
	s.op.Lock()
	defer s.op.Unlock()
	snap, err := s.load(ctx)
	if err != nil {
		return err
	}
	if _, ok := snap.roles[name]; ok {
		return fmt.Errorf("%w: role %q", ErrAlreadyExists, name)
	}
	b, _ := json.Marshal(Role{Name: name, CreatedAt: time.Now().UTC()})
	defer s.invalidate()
	return s.rs.PutRecord(ctx, collRoles, name, b)
}

// DeleteRole removes a role, its grants and its assignments. Errors:
// ErrNotFound.
func (s *Store) DeleteRole(ctx context.Context, name string) error {
	s.op.Lock()
	defer s.op.Unlock()
	snap, err := s.load(ctx)
	if err != nil {
		return err
	}
	if _, ok := snap.roles[name]; !ok {
		return fmt.Errorf("%w: role %q", ErrNotFound, name)
	}
	defer s.invalidate()
	// Grants and assignments first: a crash in between leaves a role
	// with fewer grants, never a grant of a deleted role.
	for _, g := range snap.grants[name] {
		if err := s.rs.DeleteRecord(ctx, collGrants, g.key()); err != nil {
			return err
		}
	}
	for _, p := range snap.principals {
		if slices.Contains(p.Roles, name) {
			p.Roles = slices.DeleteFunc(slices.Clone(p.Roles), func(r string) bool { return r == name })
			if err := s.putPrincipal(ctx, p); err != nil {
				return err
			}
		}
	}
	return s.rs.DeleteRecord(ctx, collRoles, name)
}

// ListRoles returns every role, by name.
func (s *Store) ListRoles(ctx context.Context) ([]Role, error) {
	snap, err := s.load(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Role, 0, len(snap.roles))
	for _, r := range snap.roles {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// AddGrant stores g; idempotent. Errors: ErrInvalidArgument, ErrNotFound
// (the role).
func (s *Store) AddGrant(ctx context.Context, g Grant) error {
	if _, err := ParsePrivilege(string(g.Privilege)); err != nil {
		return err
	}
	if err := g.On.Validate(); err != nil {
		return err
	}
	s.op.Lock()
	defer s.op.Unlock()
	snap, err := s.load(ctx)
	if err != nil {
		return err
	}
	if _, ok := snap.roles[g.Role]; !ok {
		return fmt.Errorf("%w: role %q", ErrNotFound, g.Role)
	}
	b, _ := json.Marshal(g)
	defer s.invalidate()
	return s.rs.PutRecord(ctx, collGrants, g.key(), b)
}

// RevokeGrant removes g. Errors: ErrNotFound.
func (s *Store) RevokeGrant(ctx context.Context, g Grant) error {
	s.op.Lock()
	defer s.op.Unlock()
	snap, err := s.load(ctx)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(snap.grants[g.Role], func(h Grant) bool { return h.key() == g.key() }) {
		return fmt.Errorf("%w: grant of %s on %s to %q", ErrNotFound, g.Privilege, g.On, g.Role)
	}
	defer s.invalidate()
	return s.rs.DeleteRecord(ctx, collGrants, g.key())
}

// ListGrants returns the grants of role (every role's when empty),
// ordered by role, securable and privilege.
func (s *Store) ListGrants(ctx context.Context, role string) ([]Grant, error) {
	snap, err := s.load(ctx)
	if err != nil {
		return nil, err
	}
	out := []Grant{}
	for r, gs := range snap.grants {
		if role == "" || r == role {
			out = append(out, gs...)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key() < out[j].key() })
	return out, nil
}

// dummyHash is compared against when the client id is unknown, so that
// the endpoint takes as long for a wrong id as for a wrong secret.
var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("tarn-no-such-client"), bcrypt.MinCost)

// checkSecret returns the local principal id whose secret is secret.
// Errors: ErrInvalidClient (unknown, external or wrong secret alike).
func (s *Store) checkSecret(ctx context.Context, id, secret string) (principalRecord, error) {
	snap, err := s.load(ctx)
	if err != nil {
		return principalRecord{}, err
	}
	p, ok := snap.principals[id]
	if !ok || p.External || len(p.SecretHash) == 0 {
		_ = bcrypt.CompareHashAndPassword(dummyHash, []byte(secret))
		return principalRecord{}, ErrInvalidClient
	}
	if bcrypt.CompareHashAndPassword(p.SecretHash, []byte(secret)) != nil {
		return principalRecord{}, ErrInvalidClient
	}
	return p, nil
}

// principal returns a principal's record from the snapshot.
func (s *Store) principal(ctx context.Context, id string) (principalRecord, bool, error) {
	snap, err := s.load(ctx)
	if err != nil {
		return principalRecord{}, false, err
	}
	p, ok := snap.principals[id]
	return p, ok, nil
}

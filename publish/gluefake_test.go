package publish_test

import (
	"context"
	"maps"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/glue"
	"github.com/aws/aws-sdk-go-v2/service/glue/types"

	"github.com/tarnhq/tarn/publish"
)

// fakeGlue is an in-memory Glue Data Catalog with Glue's compare-and-swap
// on VersionId (UpdateTable with a VersionId other than the table's
// fails with ConcurrentModificationException), which moto does not
// implement. It keeps what the glue target sent, for assertions.
type fakeGlue struct {
	mu     sync.Mutex
	dbs    map[string]bool
	tables map[string]*types.Table // by "db.name"
	// down, when set, fails every call.
	down error
	// beforeUpdate runs inside UpdateTable before the VersionId check
	// (a foreign writer racing Tarn's update).
	beforeUpdate func()
	// block, when set, holds every UpdateTable until it is closed.
	block   chan struct{}
	updates []*glue.UpdateTableInput
	creates int
}

var _ publish.GlueAPI = (*fakeGlue)(nil)

func newFakeGlue() *fakeGlue {
	return &fakeGlue{dbs: map[string]bool{}, tables: map[string]*types.Table{}}
}

func (f *fakeGlue) CreateDatabase(_ context.Context, in *glue.CreateDatabaseInput, _ ...func(*glue.Options)) (*glue.CreateDatabaseOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down != nil {
		return nil, f.down
	}
	name := aws.ToString(in.DatabaseInput.Name)
	if f.dbs[name] {
		return nil, &types.AlreadyExistsException{Message: aws.String("database exists")}
	}
	f.dbs[name] = true
	return &glue.CreateDatabaseOutput{}, nil
}

func (f *fakeGlue) GetTable(_ context.Context, in *glue.GetTableInput, _ ...func(*glue.Options)) (*glue.GetTableOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down != nil {
		return nil, f.down
	}
	t := f.tables[aws.ToString(in.DatabaseName)+"."+aws.ToString(in.Name)]
	if t == nil {
		return nil, &types.EntityNotFoundException{Message: aws.String("no table")}
	}
	c := *t
	c.Parameters = maps.Clone(t.Parameters)
	return &glue.GetTableOutput{Table: &c}, nil
}

func (f *fakeGlue) CreateTable(_ context.Context, in *glue.CreateTableInput, _ ...func(*glue.Options)) (*glue.CreateTableOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down != nil {
		return nil, f.down
	}
	db := aws.ToString(in.DatabaseName)
	if !f.dbs[db] {
		return nil, &types.EntityNotFoundException{Message: aws.String("no database " + db)}
	}
	k := db + "." + aws.ToString(in.TableInput.Name)
	if f.tables[k] != nil {
		return nil, &types.AlreadyExistsException{Message: aws.String("table exists")}
	}
	f.tables[k] = f.fromInput(db, in.TableInput, "1")
	f.creates++
	return &glue.CreateTableOutput{}, nil
}

func (f *fakeGlue) UpdateTable(_ context.Context, in *glue.UpdateTableInput, _ ...func(*glue.Options)) (*glue.UpdateTableOutput, error) {
	f.mu.Lock()
	block, before := f.block, f.beforeUpdate
	f.mu.Unlock()
	if block != nil {
		<-block
	}
	if before != nil {
		before()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down != nil {
		return nil, f.down
	}
	db := aws.ToString(in.DatabaseName)
	k := db + "." + aws.ToString(in.TableInput.Name)
	cur := f.tables[k]
	if cur == nil {
		return nil, &types.EntityNotFoundException{Message: aws.String("no table")}
	}
	if in.VersionId != nil && aws.ToString(in.VersionId) != aws.ToString(cur.VersionId) {
		return nil, &types.ConcurrentModificationException{Message: aws.String("version mismatch")}
	}
	f.updates = append(f.updates, in)
	f.tables[k] = f.fromInput(db, in.TableInput, next(cur.VersionId))
	return &glue.UpdateTableOutput{}, nil
}

func (f *fakeGlue) DeleteTable(_ context.Context, in *glue.DeleteTableInput, _ ...func(*glue.Options)) (*glue.DeleteTableOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down != nil {
		return nil, f.down
	}
	k := aws.ToString(in.DatabaseName) + "." + aws.ToString(in.Name)
	if f.tables[k] == nil {
		return nil, &types.EntityNotFoundException{Message: aws.String("no table")}
	}
	delete(f.tables, k)
	return &glue.DeleteTableOutput{}, nil
}

func (f *fakeGlue) fromInput(db string, in *types.TableInput, version string) *types.Table {
	return &types.Table{DatabaseName: aws.String(db), Name: in.Name, TableType: in.TableType, Description: in.Description,
		Parameters: maps.Clone(in.Parameters), StorageDescriptor: in.StorageDescriptor, VersionId: aws.String(version)}
}

// foreignUpdate changes table k as another writer would (its parameters
// set over the current ones), moving its VersionId.
func (f *fakeGlue) foreignUpdate(k string, params map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tables[k]
	maps.Copy(t.Parameters, params)
	t.VersionId = aws.String(next(t.VersionId))
}

// table returns a copy of table k, nil when absent.
func (f *fakeGlue) table(k string) *types.Table {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tables[k]
	if t == nil {
		return nil
	}
	c := *t
	c.Parameters = maps.Clone(t.Parameters)
	return &c
}

func (f *fakeGlue) set(fn func(f *fakeGlue)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func next(v *string) string {
	n, _ := strconv.Atoi(aws.ToString(v))
	return strconv.Itoa(n + 1)
}

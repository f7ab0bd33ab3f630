package catalog

import (
	"fmt"

	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"
)

// requirementFields is the union of the JSON fields of the spec's
// TableRequirement and ViewRequirement kinds.
type requirementFields struct {
	Type                    string `json:"type"`
	UUID                    string `json:"uuid"`
	Ref                     string `json:"ref"`
	SnapshotID              *int64 `json:"snapshot-id"`
	LastAssignedFieldID     int    `json:"last-assigned-field-id"`
	CurrentSchemaID         int    `json:"current-schema-id"`
	LastAssignedPartitionID int    `json:"last-assigned-partition-id"`
	DefaultSpecID           int    `json:"default-spec-id"`
	DefaultSortOrderID      int    `json:"default-sort-order-id"`
}

// requirementFailed explains why r (which iceberg-go's Validate rejected)
// does not hold against base, in the Java reference's words
// (org.apache.iceberg.UpdateRequirement), which Java clients prefix with
// "Commit failed: " and the REST Compatibility Kit checks. The decision
// itself stays iceberg-go's; only the message is shaped here.
func requirementFailed(r table.Requirement, base table.Metadata, cause error) error {
	// Only the message depends on f: a requirement that does not decode
	// (none of iceberg-go's) gets the default message.
	f, _ := DecodeFields[requirementFields](r)
	msg := ""
	switch {
	case f.Type == "assert-create":
		msg = "table already exists"
	case base == nil:
		msg = "table does not exist"
	case f.Type == "assert-table-uuid":
		msg = fmt.Sprintf("UUID does not match: expected %s != %s", base.TableUUID(), f.UUID)
	case f.Type == "assert-ref-snapshot-id":
		msg = refRequirementMessage(f, base)
	case f.Type == "assert-last-assigned-field-id":
		msg = fmt.Sprintf("last assigned field id changed: expected id %d != %d", f.LastAssignedFieldID, base.LastColumnID())
	case f.Type == "assert-current-schema-id":
		msg = fmt.Sprintf("current schema changed: expected id %d != %d", f.CurrentSchemaID, base.CurrentSchema().ID)
	case f.Type == "assert-last-assigned-partition-id":
		last := -1
		if p := base.LastPartitionSpecID(); p != nil {
			last = *p
		}
		msg = fmt.Sprintf("last assigned partition id changed: expected id %d != %d", f.LastAssignedPartitionID, last)
	case f.Type == "assert-default-spec-id":
		msg = fmt.Sprintf("default partition spec changed: expected id %d != %d", f.DefaultSpecID, base.DefaultPartitionSpec())
	case f.Type == "assert-default-sort-order-id":
		msg = fmt.Sprintf("default sort order changed: expected id %d != %d", f.DefaultSortOrderID, base.DefaultSortOrder())
	default:
		msg = cause.Error()
	}
	return Errorf(ErrCommitFailed, "Requirement failed: %s", msg)
}

func refRequirementMessage(f requirementFields, base table.Metadata) string {
	var ref table.SnapshotRef
	ok := false
	for name, r := range base.Refs() {
		if name == f.Ref {
			ref, ok = r, true
		}
	}
	switch {
	case ok && f.SnapshotID == nil:
		return fmt.Sprintf("%s %s was created concurrently", ref.SnapshotRefType, f.Ref)
	case ok:
		return fmt.Sprintf("%s %s has changed: expected id %d != %d", ref.SnapshotRefType, f.Ref, *f.SnapshotID, ref.SnapshotID)
	case f.SnapshotID != nil:
		return fmt.Sprintf("branch or tag %s is missing, expected %d", f.Ref, *f.SnapshotID)
	}
	return "ref " + f.Ref
}

// viewRequirementFailed is requirementFailed for views.
func viewRequirementFailed(r view.Requirement, base view.Metadata) error {
	f, _ := DecodeFields[requirementFields](r)
	if f.Type == "assert-view-uuid" {
		return Errorf(ErrCommitFailed, "Requirement failed: view UUID does not match: expected %s != %s", base.ViewUUID(), f.UUID)
	}
	return Errorf(ErrCommitFailed, "Requirement failed: %s", f.Type)
}

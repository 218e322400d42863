package fenced

import (
	"context"
	"encoding/json"
	"time"

	"github.com/fenced/fenced/fencedtype"
)

// MaxTags is the most tags a job may carry, and a listing filter name.
const MaxTags = 20

// MaxTagBytes is the longest a tag may be.
const MaxTagBytes = 100

// TagsMatch is how JobFilter.Tags match a job's tags: TagsAny (the
// default) or TagsAll.
type TagsMatch = fencedtype.TagsMatch

const (
	// TagsAny keeps jobs carrying at least one of the filter's tags.
	TagsAny = fencedtype.TagsAny
	// TagsAll keeps jobs carrying every one of the filter's tags.
	TagsAll = fencedtype.TagsAll
)

// validTag reports whether t is a valid tag: 1 to MaxTagBytes of ASCII
// letters, digits and "_", ".", ":", "-", "/". The set leaves out what any
// backend or surface would have to quote: spaces, commas, quotes,
// backslashes, braces, "&" and "=" of a URL's query.
func validTag(t string) bool {
	if len(t) == 0 || len(t) > MaxTagBytes {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '_', c == '.', c == ':', c == '-', c == '/':
		default:
			return false
		}
	}
	return true
}

// validTags checks a list of tags: at most MaxTags, each valid, none
// repeated. field names the list in the *InvalidError.
func validTags(field string, tags []string) error {
	if len(tags) > MaxTags {
		return fencedtype.Invalid(field, "%d tags, the most is %d", len(tags), MaxTags)
	}
	seen := make(map[string]bool, len(tags))
	for _, t := range tags {
		if !validTag(t) {
			return fencedtype.Invalid(field, "%q is not 1 to %d bytes of ASCII letters, digits and _ . : - /", t, MaxTagBytes)
		}
		if seen[t] {
			return fencedtype.Invalid(field, "%q is given twice", t)
		}
		seen[t] = true
	}
	return nil
}

// ValidateTags returns the *InvalidError an enqueue returns for these tags,
// or nil: the CLI and the HTTP API check them with it.
func ValidateTags(tags []string) error { return validTags("tags", tags) }

// validTagsFilter checks a listing's tags filter.
func validTagsFilter(f JobFilter) error {
	if err := validTags("tag", f.Tags); err != nil {
		return err
	}
	switch f.TagsMatch {
	case "", TagsAny:
	case TagsAll:
		if len(f.Tags) == 0 {
			return fencedtype.Invalid("tag match", "%q is given without tags", f.TagsMatch)
		}
	default:
		return fencedtype.Invalid("tag match", "%q is not any or all", f.TagsMatch)
	}
	return nil
}

// MergeJobMetadata merges patch into the job's metadata as a JSON Merge
// Patch (RFC 7396): each key of patch replaces the job's value of it, a
// null removes the key, and an object merges into an object recursively;
// a job without metadata starts from {}. It is a write of attempt ref,
// guarded as ReportProgress is in the same statement (id, fence, running,
// an unexpired lease by the database's clock): a stale attempt gets a
// *StaleError (or ErrNotFound) and nothing is merged. patch is a JSON
// object held to Metadata's rules (json.RawMessage or []byte as JSON
// text, anything else marshalled); a merged object over MaxMetadataBytes,
// as the database prints it, is refused with an *InvalidError of
// "metadata", checked in the same statement. It returns the merged
// metadata and the database clock reading it was merged at.
func (c *Client) MergeJobMetadata(ctx context.Context, ref JobRef, patch any) (json.RawMessage, time.Time, error) {
	if err := validRefs([]JobRef{ref}); err != nil {
		return nil, time.Time{}, err
	}
	b, err := metadataPatch(patch)
	if err != nil {
		return nil, time.Time{}, err
	}
	jd, err := c.jobQueue()
	if err != nil {
		return nil, time.Time{}, err
	}
	merged, at, err := jd.MergeJobMetadata(ctx, ref, b, MaxMetadataBytes)
	if err != nil {
		return nil, time.Time{}, err
	}
	return json.RawMessage(merged), at, nil
}

// metadataPatch encodes and checks a metadata merge patch: a JSON object
// of at most MaxMetadataBytes, storable.
func metadataPatch(patch any) ([]byte, error) {
	if patch == nil {
		return nil, fencedtype.Invalid("metadata", "the patch is missing; it must be a JSON object")
	}
	b, err := encodeJSON("metadata", patch)
	if err != nil {
		return nil, err
	}
	if err := checkMetadata(b); err != nil {
		return nil, err
	}
	return b, nil
}

// MergeMetadata merges patch into the job's metadata (see
// Client.MergeJobMetadata); it is a guarded write, so a stale attempt gets
// a *StaleError and nothing is merged.
func (r *JobRun) MergeMetadata(ctx context.Context, patch any) (json.RawMessage, error) {
	m, _, err := r.c.MergeJobMetadata(ctx, r.Ref(), patch)
	return m, err
}

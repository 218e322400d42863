package fenced

import (
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/fenced/fenced/fencedtype"
)

// Limits on input, checked before any statement runs.
const (
	MaxNameBytes  = 200              // lease names, owners, resource keys, operation ids
	MinTTL        = time.Millisecond // the SQLite clock's resolution
	MaxTTL        = 24 * time.Hour
	MaxValueBytes = 1 << 20 // resource values
)

// validName checks a name-like field: 1–200 bytes of UTF-8 without control
// characters.
func validName(field, s string) error {
	switch {
	case s == "":
		return fencedtype.Invalid(field, "must not be empty")
	case len(s) > MaxNameBytes:
		return fencedtype.Invalid(field, "is %d bytes, the limit is %d", len(s), MaxNameBytes)
	case !utf8.ValidString(s):
		return fencedtype.Invalid(field, "is not valid UTF-8")
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return fencedtype.Invalid(field, "contains control character %U", r)
		}
	}
	return nil
}

func validTTL(ttl time.Duration) error {
	if ttl < MinTTL || ttl > MaxTTL {
		return fencedtype.Invalid("ttl", "%s is outside %s to %s", ttl, MinTTL, MaxTTL)
	}
	return nil
}

func validFence(fence int64) error {
	if fence < 0 {
		return fencedtype.Invalid("fence", "%d is negative", fence)
	}
	return nil
}

// validRef checks the identity of a lease generation.
func validRef(l Lease) error {
	if err := validName("lease name", l.Name); err != nil {
		return err
	}
	if err := validName("owner", l.Owner); err != nil {
		return err
	}
	return validFence(l.Fence)
}

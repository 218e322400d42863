package mysqldriver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// splitPatch splits a JSON Merge Patch (RFC 7396, an object) into the
// patch without its nulls and the paths its nulls remove, so that
// JSON_REMOVE(JSON_MERGE_PATCH(target, rest), removes...) is the patch
// applied: MariaDB's JSON_MERGE_PATCH (10.11) drops keys a null does not
// name, or keeps keys a null names, when a patch removes a key
// (JSON_MERGE_PATCH('{"a":1,"b":2}', '{"b":null,"a":null}') is {"b": 2}),
// while it adds and replaces keys as the RFC says, and JSON_REMOVE removes
// what it is told. A null nested in an object of the patch is a path into
// that object, which the merge of rest made an object; a removed path that
// does not exist changes nothing.
func splitPatch(patch []byte) (rest []byte, removes []string, err error) {
	d := json.NewDecoder(bytes.NewReader(patch))
	d.UseNumber()
	var p map[string]any
	if err := d.Decode(&p); err != nil {
		return nil, nil, fmt.Errorf("metadata patch: %w", err)
	}
	removes = nullPaths("$", p, nil)
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(p); err != nil {
		return nil, nil, fmt.Errorf("metadata patch: %w", err)
	}
	return bytes.TrimSpace(b.Bytes()), removes, nil
}

// nullPaths deletes the null members of obj (recursively) and appends
// the path of each to paths, in key order.
func nullPaths(prefix string, obj map[string]any, paths []string) []string {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		path := prefix + "." + pathKey(k)
		switch v := obj[k].(type) {
		case nil:
			delete(obj, k)
			paths = append(paths, path)
		case map[string]any:
			paths = nullPaths(path, v, paths)
		}
	}
	return paths
}

// pathKey is a key as a JSON path member: double-quoted, with its
// quotes and backslashes escaped.
func pathKey(k string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(k) + `"`
}

// mergeExpr is the SQL expression of the metadata merged with a patch of n
// removed paths: its parameters are rest, then the n paths.
func mergeExpr(n int) string {
	merged := `JSON_MERGE_PATCH(COALESCE(metadata, '{}'), ?)`
	if n == 0 {
		return merged
	}
	return `JSON_REMOVE(` + merged + strings.Repeat(", ?", n) + `)`
}

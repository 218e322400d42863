package drivertest

import (
	"github.com/anishathalye/porcupine"

	"github.com/fenced/fenced/internal/test/linmodel"
)

// The model histories are checked against is internal/test/linmodel's, the
// sequential specification of docs/design.md §4–§5 (the chaos suite checks its
// histories against the same one). These are its names as this package's
// tests use them.

type (
	linKind   = linmodel.Kind
	linInput  = linmodel.Input
	linResult = linmodel.Result
	linOutput = linmodel.Output
	linSpec   = linmodel.Spec
)

const (
	linAcquire  = linmodel.Acquire
	linRenew    = linmodel.Renew
	linRelease  = linmodel.Release
	linTx       = linmodel.Tx
	linWrite    = linmodel.Write
	linRead     = linmodel.Read
	linGet      = linmodel.Get
	linOK       = linmodel.OK
	linHeld     = linmodel.Held
	linStale    = linmodel.Stale
	linNotFound = linmodel.NotFound
	linUnknown  = linmodel.Unknown
)

// linModel is the specification (or a deliberately broken variant of it)
// as a porcupine model.
func linModel(spec linSpec) porcupine.Model { return linmodel.Model(spec) }

// linDescribe describes one call and its outcome.
func linDescribe(input, output any) string { return linmodel.Describe(input, output) }

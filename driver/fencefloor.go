package driver

import "context"

// FenceFloorReader is implemented by backends that can read the fence floor:
// the value the last fence advance raised every lease's fence to (0 before
// any). Every grant is above the floor at the time it is made, and the floor
// only rises, so a lease whose fence equals the floor was set there by the
// last advance and not granted since: the Client reports it as Advanced. A
// backend without it reports no lease as Advanced.
type FenceFloorReader interface {
	// FenceFloor reads the fence floor in one statement.
	FenceFloor(ctx context.Context) (int64, error)
}

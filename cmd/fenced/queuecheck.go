package main

import (
	"context"

	"github.com/fenced/fenced/fencedtype"
)

// The input check of the queue commands (see checkInput).
func (checkDriver) PauseQueue(context.Context, string) (*fencedtype.QueuePause, bool, error) {
	return nil, false, errChecked
}
func (checkDriver) ResumeQueue(context.Context, string) (bool, error) { return false, errChecked }
func (checkDriver) ListQueuePauses(context.Context) ([]fencedtype.QueuePause, error) {
	return nil, errChecked
}

package fenced

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fenced/fenced/driver"
)

// Capability is a part of the API that needs more of a backend than the
// core every driver implements (driver.Driver: leases, fenced transactions,
// the resource store, fence advances, leader election): a driver interface
// the backend implements, or not. New asks the driver for each once; on a
// backend without one, every method of it returns its error (Unsupported)
// without reaching the driver.
type Capability string

// The capabilities.
const (
	// CapJobs is the job queue (driver.JobDriver): enqueues, claims, the
	// writes of an attempt, job administration, limits, pauses, the minute
	// rollups, Workers and a Maintainer's job recovery.
	CapJobs Capability = "jobs"
	// CapSemaphores is the semaphores (driver.SemaphoreDriver).
	CapSemaphores Capability = "semaphores"
	// CapWorkflows is the workflows (driver.WorkflowDriver): EnqueueWorkflow
	// and the reads and administration of workflows.
	CapWorkflows Capability = "workflows"
	// CapClock is DatabaseTime (driver.Clock): the database clock read in
	// a statement of its own.
	CapClock Capability = "clock"
)

// The errors of the capabilities a backend may lack (etcd lacks all three).
// Each matches errors.ErrUnsupported. A method of a missing capability
// returns an error that matches its sentinel and names the backend.
var (
	// ErrJobsNotSupported: the backend keeps no job queue (CapJobs).
	ErrJobsNotSupported = fmt.Errorf("the backend keeps no job queue: %w", errors.ErrUnsupported)
	// ErrSemaphoresNotSupported: the backend keeps no semaphores
	// (CapSemaphores).
	ErrSemaphoresNotSupported = fmt.Errorf("the backend keeps no semaphores: %w", errors.ErrUnsupported)
	// ErrWorkflowsNotSupported: the backend keeps no workflows
	// (CapWorkflows).
	ErrWorkflowsNotSupported = fmt.Errorf("the backend keeps no workflows: %w", errors.ErrUnsupported)
	// ErrClockNotSupported: the backend cannot read its clock in a
	// statement of its own (CapClock).
	ErrClockNotSupported = fmt.Errorf("the backend cannot read its clock alone: %w", errors.ErrUnsupported)
)

// Supports reports whether the Client's backend implements cap.
func (c *Client) Supports(cap Capability) bool { return c.Unsupported(cap) == nil }

// Unsupported returns nil when the Client's backend implements cap, else
// the error every method of cap returns on this Client: it says what the
// backend keeps instead and matches cap's sentinel (ErrJobsNotSupported,
// ErrSemaphoresNotSupported, ErrClockNotSupported) and
// errors.ErrUnsupported. An unknown capability is unsupported.
func (c *Client) Unsupported(cap Capability) error {
	cs := c.caps
	switch cap {
	case CapJobs:
		if cs.jobs == nil {
			return &unsupportedError{ErrJobsNotSupported, fmt.Sprintf(
				"the job queue is not offered on %s, which keeps %s only: use a PostgreSQL, MySQL or SQLite database for jobs",
				c.d.Dialect(), cs.keeps())}
		}
	case CapSemaphores:
		if cs.semaphores == nil {
			return &unsupportedError{ErrSemaphoresNotSupported, fmt.Sprintf(
				"semaphores are not offered on %s, which keeps %s only: use a lease, or a PostgreSQL, MySQL or SQLite database",
				c.d.Dialect(), cs.keeps())}
		}
	case CapWorkflows:
		if cs.workflows == nil {
			return &unsupportedError{ErrWorkflowsNotSupported, fmt.Sprintf(
				"workflows are not offered on %s, which keeps %s only", c.d.Dialect(), cs.keeps())}
		}
	case CapClock:
		if cs.clock == nil {
			return &unsupportedError{ErrClockNotSupported, fmt.Sprintf(
				"database time is not offered on %s, which cannot read its clock in a statement of its own", c.d.Dialect())}
		}
	default:
		return fmt.Errorf("no capability %q is known: %w", cap, errors.ErrUnsupported)
	}
	return nil
}

// capabilities are the interfaces the Client's driver implements beyond
// driver.Driver, asserted once by New: nil where it does not. The job
// queue's optional interfaces are asserted only with the job queue.
type capabilities struct {
	jobs       driver.JobDriver
	semaphores driver.SemaphoreDriver
	clock      driver.Clock
	bulk       driver.BulkEnqueuer     // a cheaper EnqueueBulk
	listener   driver.JobListener      // enqueues anywhere wake waiters
	tidier     driver.JobTidier        // the maintainer vacuums the job table
	floor      driver.FenceFloorReader // leases report Advanced
	workflows  driver.WorkflowDriver
}

// assertCapabilities asks d for each capability.
func assertCapabilities(d driver.Driver) capabilities {
	var cs capabilities
	cs.jobs, _ = d.(driver.JobDriver)
	cs.semaphores, _ = d.(driver.SemaphoreDriver)
	cs.clock, _ = d.(driver.Clock)
	cs.floor, _ = d.(driver.FenceFloorReader)
	if cs.jobs != nil {
		cs.bulk, _ = d.(driver.BulkEnqueuer)
		cs.listener, _ = d.(driver.JobListener)
		cs.tidier, _ = d.(driver.JobTidier)
		cs.workflows, _ = d.(driver.WorkflowDriver)
	}
	return cs
}

// keeps lists what the backend keeps, for the errors of what it does not.
func (cs capabilities) keeps() string {
	parts := []string{"leases"}
	if cs.semaphores != nil {
		parts = append(parts, "semaphores")
	}
	if cs.jobs != nil {
		parts = append(parts, "jobs")
	}
	return strings.Join(parts, ", ") + ", fences and resources"
}

// unsupportedError is the error of a method whose capability the backend
// lacks: msg names the backend and what it keeps; it matches its
// capability's sentinel.
type unsupportedError struct {
	sentinel error
	msg      string
}

func (e *unsupportedError) Error() string { return e.msg }
func (e *unsupportedError) Unwrap() error { return e.sentinel }

// jobQueue is the backend's job queue: every job method asks it before it
// calls the driver, and returns its error on a backend without one.
func (c *Client) jobQueue() (driver.JobDriver, error) {
	if c.caps.jobs == nil {
		return nil, c.Unsupported(CapJobs)
	}
	return c.caps.jobs, nil
}

// workflowDriver is the backend's workflows, as jobQueue is its job queue.
func (c *Client) workflowDriver() (driver.WorkflowDriver, error) {
	if c.caps.workflows == nil {
		return nil, c.Unsupported(CapWorkflows)
	}
	return c.caps.workflows, nil
}

// semaphoreDriver is the backend's semaphores, as jobQueue is its job
// queue.
func (c *Client) semaphoreDriver() (driver.SemaphoreDriver, error) {
	if c.caps.semaphores == nil {
		return nil, c.Unsupported(CapSemaphores)
	}
	return c.caps.semaphores, nil
}

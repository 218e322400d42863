// Package fencedtest helps the tests of programs that use fenced's job
// queue: assert that code under test enqueued a job (RequireInserted,
// RequireNotInserted, RequireManyInserted, inside its transaction or after
// it committed), run one job of a kind through the real handler path of a
// fenced.Worker — claim, fence, heartbeats, the fenced outcome write — and
// get its outcome (Worker), and give a test a fresh migrated database on
// each backend (NewSQLite, NewPostgres, NewMySQL). For typed kinds
// (fenced.JobArgs), RequireInsertedArgs and NewKindWorker take the kind
// from the args' type.
//
// It is for tests only: its functions fail the test they are given
// (testing.TB's Fatalf) instead of returning errors.
package fencedtest

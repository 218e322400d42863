package sqlitedriver

// BackoffUS exposes backoffUS to the backend's external tests.
var BackoffUS = backoffUS

//go:build fenced_broken_limits

package driver

// A DELIBERATELY BROKEN BUILD, selected only by the build tag
// fenced_broken_limits: a limited claim takes no locks and admits every
// candidate it picked, up to the claim's limit, whatever its key's,
// kind's or queue's limit and its sequence. The conformance suite's
// concurrency-limit and sequence tests must fail under it (the racing
// claimers' test included). Never ship a binary built with this tag.
const LimitsEnforced = false

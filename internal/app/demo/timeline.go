package demo

// timeline collects a scenario's steps as they happen.
type timeline struct{ steps []Step }

// add records a step whose observed outcome must equal the expected one.
func (t *timeline) add(who, action, expected, observed string) {
	t.steps = append(t.steps, Step{Who: who, Action: action, Expected: expected, Observed: observed})
}

// check records a step judged by ok: for outcomes that carry what only the
// run decides (who won a race, measured times), which the expected text
// cannot spell out.
func (t *timeline) check(ok bool, who, action, expected, observed string) {
	t.steps = append(t.steps, Step{Who: who, Action: action, Expected: expected, Observed: observed,
		Match: func() bool { return ok }})
}

// fail records a step that could not run; it never matches.
func (t *timeline) fail(who, action, expected string, err error) {
	t.check(false, who, action, expected, "error: "+err.Error())
}

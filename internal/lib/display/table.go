package display

import (
	"io"
	"strings"
)

// Table prints rows of cells in columns aligned by Width: each column as
// wide as its widest cell, Gap spaces between columns (2 when 0), the last
// column unpadded and no line ending in a space. Cells are printed as they
// are: escape them first (Name, Text).
type Table struct {
	Rows [][]string // the header, if any, is the first row
	Gap  int
	// MaxWidth, when positive, is the widest a line may be. While the
	// table is wider, the widest of the columns Wrap marks is narrowed,
	// down to MinWrap columns (12 when 0), and its cells are wrapped at
	// spaces (a word longer than the column is cut). A table that still
	// does not fit is printed as narrow as it got.
	MaxWidth int
	Wrap     []bool
	MinWrap  int
}

// Write prints the table.
func (t Table) Write(w io.Writer) error {
	gap := t.Gap
	if gap == 0 {
		gap = 2
	}
	ncol := 0
	for _, r := range t.Rows {
		ncol = max(ncol, len(r))
	}
	widths := make([]int, ncol)
	for _, r := range t.Rows {
		for c, cell := range r {
			for _, line := range strings.Split(cell, "\n") {
				widths[c] = max(widths[c], Width(line))
			}
		}
	}
	if t.MaxWidth > 0 {
		t.narrow(widths, gap)
	}
	var b strings.Builder
	for _, r := range t.Rows {
		lines := make([][]string, len(r))
		height := 1
		for c, cell := range r {
			lines[c] = wrap(cell, widths[c])
			height = max(height, len(lines[c]))
		}
		for l := range height {
			var line strings.Builder
			for c := range r {
				text := ""
				if l < len(lines[c]) {
					text = lines[c][l]
				}
				line.WriteString(text)
				if c < len(r)-1 {
					line.WriteString(strings.Repeat(" ", widths[c]-Width(text)+gap))
				}
			}
			b.WriteString(strings.TrimRight(line.String(), " "))
			b.WriteByte('\n')
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// narrow narrows the wrappable columns of widths, widest first, until the
// lines fit in MaxWidth or none can be narrowed further.
func (t Table) narrow(widths []int, gap int) {
	minWrap := t.MinWrap
	if minWrap == 0 {
		minWrap = 12
	}
	total := gap * (len(widths) - 1)
	for _, w := range widths {
		total += w
	}
	for total > t.MaxWidth {
		widest := -1
		for c, w := range widths {
			if c < len(t.Wrap) && t.Wrap[c] && w > minWrap && (widest < 0 || w > widths[widest]) {
				widest = c
			}
		}
		if widest < 0 {
			return
		}
		widths[widest]--
		total--
	}
}

// Wrap splits text into lines at most width columns wide, at its newlines
// and then at spaces; a word wider than width is cut.
func Wrap(text string, width int) []string { return wrap(text, width) }

func wrap(cell string, width int) []string {
	var out []string
	for _, para := range strings.Split(cell, "\n") {
		if Width(para) <= width {
			out = append(out, para)
			continue
		}
		line := ""
		for _, word := range strings.Fields(para) {
			for Width(word) > width {
				if line != "" {
					out, line = append(out, line), ""
				}
				head, rest := cut(word, width)
				out, word = append(out, head), rest
			}
			switch {
			case line == "":
				line = word
			case Width(line)+1+Width(word) <= width:
				line += " " + word
			default:
				out, line = append(out, line), word
			}
		}
		out = append(out, line)
	}
	return out
}

// cut splits s after at most width columns (at least one character).
func cut(s string, width int) (string, string) {
	w := 0
	for i, r := range s {
		if rw := runeWidth(r); w+rw > width && i > 0 {
			return s[:i], s[i:]
		} else {
			w += rw
		}
	}
	return s, ""
}

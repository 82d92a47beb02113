package export

import "testing"

func TestSafeCell(t *testing.T) {
	for in, want := range map[string]string{
		"=1+1":               `'=1+1`,
		"+cmd|' /C calc'!A0": `'+cmd|' /C calc'!A0`,
		"-2+3":               `'-2+3`,
		"@SUM(A1)":           `'@SUM(A1)`,
		"\t=1":               "'\t=1",
		"\r=1":               "'\r=1",
		"-1.5":               "-1.5",
		"+2":                 "+2",
		"-0x1p3":             "'-0x1p3",
		"plain text":         "plain text",
		"":                   "",
		"a=b":                "a=b",
		"Ünïcode = fine":     "Ünïcode = fine",
	} {
		if got := SafeCell(in); got != want {
			t.Errorf("SafeCell(%q) = %q, want %q", in, got, want)
		}
	}
}

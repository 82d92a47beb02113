package migration

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestLoad(t *testing.T) {
	ms, err := Load(fstest.MapFS{
		"m/0010_later.sql": {Data: []byte("B")},
		"m/0002_first.sql": {Data: []byte("A")},
		"m/README":         {Data: []byte("x")},
	}, "m/*.sql")
	if err != nil || len(ms) != 2 || ms[0].Version != 2 || ms[0].SQL != "A" || ms[1].Name != "0010_later.sql" {
		t.Fatalf("%+v %v", ms, err)
	}
	for name, want := range map[string]string{"m/first.sql": "NNNN_description", "m/x_y.sql": "positive version", "m/0000_z.sql": "positive version"} {
		if _, err := Load(fstest.MapFS{name: {}}, "m/*.sql"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := Load(fstest.MapFS{"m/0001_a.sql": {}, "m/001_b.sql": {}}, "m/*.sql"); err == nil || !strings.Contains(err.Error(), "same version") {
		t.Errorf("duplicate version: %v", err)
	}
}

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestDemo: the run with no flags welcomes the customer on the embedded
// mock and exits 0.
func TestDemo(t *testing.T) {
	var out, errs bytes.Buffer
	if code := cli(context.Background(), nil, &out, &errs); code != exitOK {
		t.Fatalf("exit %d; stdout:\n%s\nstderr:\n%s", code, out.String(), errs.String())
	}
	for _, want := range []string{
		"received:  change_external_contact add_external_contact: wmAnnExample added zhangsan",
		"welcomed:  wmAnnExample",
		"1 callback delivered in 1 attempt(s); 1 welcome message(s) delivered to wmAnnExample",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out.String())
		}
	}
}

// TestFlags: the receiver needs all three of its flags; a bad one exits 2.
func TestFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"token only", []string{"-token", "T"}, exitFlags},
		{"no corp id", []string{"-token", "T", "-aes-key", testKey}, exitFlags},
		{"argument", []string{"extra"}, exitFlags},
		{"unknown flag", []string{"-nope"}, exitFlags},
		{"help", []string{"-h"}, exitOK},
		{"bad key", []string{"-token", "T", "-aes-key", "short", "-corp-id", testCorp}, exitFailed},
		{"bad listen", []string{"-token", "T", "-aes-key", testKey, "-corp-id", testCorp, "-listen", "256.0.0.1:x"}, exitFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errs bytes.Buffer
			if code := cli(context.Background(), tt.args, &out, &errs); code != tt.want {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tt.want, errs.String())
			}
			if out.Len() != 0 {
				t.Errorf("stdout %q, want nothing", out.String())
			}
			if tt.want != exitOK && errs.Len() == 0 {
				t.Error("nothing on stderr")
			}
		})
	}
}

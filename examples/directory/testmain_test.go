package main

import (
	"os"
	"testing"

	"github.com/wecomkit/wecom/internal/waiting"
)

func TestMain(m *testing.M) { os.Exit(waiting.Run(m)) }

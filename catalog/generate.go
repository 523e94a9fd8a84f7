package catalog

//go:generate go run ../internal/cmd/limitsdoc -readme ../README.md

package catalog

//go:generate go run ../internal/cmd/limitsdoc -out ../LIMITS.md

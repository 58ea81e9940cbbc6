//go:build !race

package kernel

const raceBuild = false

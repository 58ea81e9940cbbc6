//go:build !race

package frontier

const raceBuild = false

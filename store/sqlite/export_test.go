package sqlite

// MigrationsThrough lets the external tests build a database as an older
// build left it: the first v migrations, exactly as released.
func MigrationsThrough(v int) []string { return migrations[:v] }

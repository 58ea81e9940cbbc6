package sqlite

// MigrationsThrough lets the external tests build a database as an older
// build left it: the first v migrations, exactly as released.
func MigrationsThrough(v int) []string { return migrations[:v] }

// CheckpointEvery sets how many log pages the writer's COMMITs write
// before the checkpointer runs; set before the first write.
func CheckpointEvery(s *Store, frames int) { s.ckpt.every = frames }

// WriteUnpacked makes s write checkpoints' bodies as they are, as a build
// at schema version 9 wrote them.
func WriteUnpacked(s *Store) { s.testUnpacked = true }

// PruneWithoutZeroing makes s prune and reseal as a build before they
// zeroed what they removed did: the bytes stay in the file's free space.
func PruneWithoutZeroing(s *Store) { s.testNoZeroing = true }

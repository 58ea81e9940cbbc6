package main

import (
	"os"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sealed"
)

// encryptionKeyEnv holds keys for encryption at rest when no key file is
// named: base64 of 32 bytes each, comma-separated, the first one current.
const encryptionKeyEnv = "FLRH_ENCRYPTION_KEY"

// encryptionKeyFile is the value of --encryption-key-file of the command
// being run.
var encryptionKeyFile string

// addEncryptionFlag adds --encryption-key-file to a command that opens a
// store.
func addEncryptionFlag(cmd *cobra.Command) {
	cmd.Flags().StringVar(&encryptionKeyFile, "encryption-key-file", "",
		"encrypt checkpoints and traces at rest with the keys in this file (base64 of 32 bytes a line, the first current, the rest older keys still read); default: "+encryptionKeyEnv+" if set")
}

// storeSealer returns the keyring for encryption at rest from
// --encryption-key-file or FLRH_ENCRYPTION_KEY, or nil when neither is
// given. Naming both is refused rather than guessed at.
func storeSealer() (store.Sealer, error) {
	env := os.Getenv(encryptionKeyEnv)
	switch {
	case encryptionKeyFile != "" && env != "":
		return nil, usagef("both --encryption-key-file and %s are set; give one", encryptionKeyEnv)
	case encryptionKeyFile != "":
		fi, err := os.Stat(encryptionKeyFile)
		if err != nil {
			return nil, usagef("--encryption-key-file: %v", err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			return nil, usagef("--encryption-key-file %s is readable by others (mode %v); chmod 600 it", encryptionKeyFile, fi.Mode().Perm())
		}
		b, err := os.ReadFile(encryptionKeyFile)
		if err != nil {
			return nil, usagef("--encryption-key-file: %v", err)
		}
		k, err := sealed.Parse(string(b))
		if err != nil {
			return nil, usagef("--encryption-key-file %s: %v", encryptionKeyFile, err)
		}
		return k, nil
	case env != "":
		k, err := sealed.Parse(env)
		if err != nil {
			return nil, usagef("%s: %v", encryptionKeyEnv, err)
		}
		return k, nil
	}
	return nil, nil
}

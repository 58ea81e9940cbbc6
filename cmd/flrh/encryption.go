package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sealed"
)

// encryptionKeyEnv holds keys for encryption at rest when no key file is
// named: base64 of 32 bytes each, comma-separated, the first one current.
const encryptionKeyEnv = "FLRH_ENCRYPTION_KEY"

// encryptionKeyCommandEnv names a command that prints the keys, as
// --encryption-key-command does.
const encryptionKeyCommandEnv = "FLRH_ENCRYPTION_KEY_COMMAND"

// encryptionKeyFile and encryptionKeyCommand are the values of
// --encryption-key-file and --encryption-key-command of the command being
// run.
var encryptionKeyFile, encryptionKeyCommand string

// keyCommandTimeout bounds the key command: a key service that does not
// answer fails the command that needed the key rather than hanging it.
// A variable so that tests can shorten it.
var keyCommandTimeout = 30 * time.Second

// keyCommandMaxOutput bounds what the key command may print. A keyring of
// a thousand keys is under 46 KiB; more is a command printing something
// else.
const keyCommandMaxOutput = 64 << 10

// addEncryptionFlag adds --encryption-key-file and --encryption-key-command
// to a command that opens a store.
func addEncryptionFlag(cmd *cobra.Command) {
	cmd.Flags().StringVar(&encryptionKeyFile, "encryption-key-file", "",
		"encrypt checkpoints and traces at rest with the keys in this file (base64 of 32 bytes a line, the first current, the rest older keys still read); default: "+encryptionKeyEnv+" if set")
	cmd.Flags().StringVar(&encryptionKeyCommand, "encryption-key-command", "",
		"run this shell command once and read the keys from what it prints, in the key file's format (a key service's CLI: nothing written to disk); default: "+encryptionKeyCommandEnv+" if set")
}

// processKeys is the keyring this process opens its stores with, in a
// sealed.Ring that flrh serve replaces on SIGHUP (reloadKeys), read once
// however many stores the process opens (so a key service is asked
// once), and again only when the source given changes (tests run many
// commands in one process).
var processKeys struct {
	from keySource // the source read, and what it names
	ring *sealed.Ring
}

// keySource is where the keys come from: the flag or variable, and what
// it holds.
type keySource struct{ name, value string }

// keySourceGiven returns the one source of keys given, or none; giving
// more than one is refused rather than guessed at.
func keySourceGiven() (keySource, error) {
	return oneSource("are all set; give one source of encryption keys",
		keySource{"--encryption-key-file", encryptionKeyFile},
		keySource{encryptionKeyEnv, os.Getenv(encryptionKeyEnv)},
		keySource{"--encryption-key-command", encryptionKeyCommand},
		keySource{encryptionKeyCommandEnv, os.Getenv(encryptionKeyCommandEnv)})
}

// oneSource returns the one of sources whose value is set, or none; more
// than one is a usage error naming them, followed by tooMany.
func oneSource(tooMany string, sources ...keySource) (keySource, error) {
	var given []string
	var src keySource
	for _, s := range sources {
		if s.value != "" {
			given, src = append(given, s.name), s
		}
	}
	if len(given) > 1 {
		return keySource{}, usagef("%s %s", strings.Join(given, " and "), tooMany)
	}
	return src, nil
}

// readSecretFile reads the file a source names, refused when others may
// read it: it holds a key.
func readSecretFile(src keySource) ([]byte, error) {
	fi, err := os.Stat(src.value)
	if err != nil {
		return nil, usagef("%s: %v", src.name, err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, usagef("%s %s is readable by others (mode %v); chmod 600 it", src.name, src.value, fi.Mode().Perm())
	}
	b, err := os.ReadFile(src.value)
	if err != nil {
		return nil, usagef("%s: %v", src.name, err)
	}
	return b, nil
}

// storeSealer returns the keyring for encryption at rest from
// --encryption-key-file, FLRH_ENCRYPTION_KEY or the key command, or nil
// when none is given.
func storeSealer() (store.Sealer, error) {
	src, err := keySourceGiven()
	if err != nil || src.value == "" {
		return nil, err
	}
	if processKeys.ring != nil && processKeys.from == src {
		return processKeys.ring, nil
	}
	k, err := src.read()
	if err != nil {
		return nil, err
	}
	processKeys.from, processKeys.ring = src, sealed.NewRing(k)
	return processKeys.ring, nil
}

// read reads the keyring from the source.
func (src keySource) read() (*sealed.Keyring, error) {
	switch src.name {
	case "--encryption-key-file":
		b, err := readSecretFile(src)
		if err != nil {
			return nil, err
		}
		k, err := sealed.Parse(string(b))
		if err != nil {
			return nil, usagef("--encryption-key-file %s: %v", src.value, err)
		}
		return k, nil
	case encryptionKeyEnv:
		k, err := sealed.Parse(src.value)
		if err != nil {
			return nil, usagef("%s: %v", encryptionKeyEnv, err)
		}
		return k, nil
	}
	return keysFromCommand(src.name, src.value)
}

// reloadKeys reads the keys again from where the process read them (the
// file again, the command run again) and puts them in place of the old
// ones for every store the process opened: a rotation without a restart
// (flrh serve on SIGHUP). New keys that lack the one records are sealed
// under now are refused, and so is a source that fails: the keys stay as
// they were, and the log says why. Keys from FLRH_ENCRYPTION_KEY cannot
// change in a running process.
func reloadKeys(log *slog.Logger) {
	ring, src := processKeys.ring, processKeys.from
	switch {
	case ring == nil:
		return
	case src.name == encryptionKeyEnv:
		log.Info("encryption keys kept: " + encryptionKeyEnv + " is read at start only")
		return
	}
	k, err := src.read()
	if err == nil {
		err = ring.Swap(k)
	}
	if err != nil {
		log.Warn("encryption keys kept as they were", "source", src.name, "err", err.Error())
		return
	}
	log.Info("encryption keys reloaded", "source", src.name, "primary", ring.Primary())
}

// keysFromCommand runs command (commandOutput) and parses what it prints
// as a key file.
func keysFromCommand(from, command string) (*sealed.Keyring, error) {
	out, err := commandOutput(from, command, "")
	if err != nil {
		return nil, err
	}
	k, err := sealed.Parse(out)
	if err != nil {
		return nil, usagef("%s printed no keyring: %v", from, err)
	}
	return k, nil
}

// commandOutput runs command with /bin/sh, in the process's environment (a
// key service's CLI finds its credentials there), and returns what it
// printed. It has no input but message, which is also in its environment
// as FLRH_SIGN_MESSAGE when not "" (what a signing command signs). The command's process group is killed when
// it outlasts keyCommandTimeout, so a child it left behind holding its
// output open does not hang the caller. The error names the source (from),
// the exit status and the last line the command wrote to standard error,
// never the command (it may carry a token) nor what it printed (it may be
// a key).
func commandOutput(from, command, message string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), keyCommandTimeout)
	defer cancel()
	c := exec.CommandContext(ctx, "/bin/sh", "-c", command)
	if message != "" {
		c.Stdin = strings.NewReader(message)
		c.Env = append(os.Environ(), signMessageEnv+"="+message)
	}
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	c.WaitDelay = time.Second
	stdout := &cappedBuffer{max: keyCommandMaxOutput}
	stderr := &cappedBuffer{max: 4 << 10, keepLast: true}
	c.Stdout, c.Stderr = stdout, stderr
	err := c.Run()
	if errors.Is(err, exec.ErrWaitDelay) && c.ProcessState.Success() {
		// The command finished, and left a child of its own holding its
		// output open: what it printed before it exited is its answer.
		err = nil
	}
	switch {
	case ctx.Err() != nil:
		return "", fmt.Errorf("%s did not finish within %v%s", from, keyCommandTimeout, stderr.lastLine())
	case err != nil:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return "", fmt.Errorf("%s failed (%v)%s", from, exit.ProcessState, stderr.lastLine())
		}
		return "", fmt.Errorf("%s: %v", from, err)
	case stdout.over:
		return "", usagef("%s printed more than %d KiB; it should print the keys alone", from, keyCommandMaxOutput>>10)
	}
	return stdout.String(), nil
}

// cappedBuffer keeps at most max bytes of what is written to it: the
// first ones, or with keepLast the latest. It takes everything offered,
// so that the writer is never blocked or broken by it.
type cappedBuffer struct {
	buf      bytes.Buffer // not embedded: its ReadFrom would bypass the cap
	max      int
	keepLast bool
	over     bool
}

func (b *cappedBuffer) String() string { return b.buf.String() }

func (b *cappedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if room := b.max - b.buf.Len(); len(p) > room {
		b.over = true
		if !b.keepLast {
			p = p[:max(room, 0)]
		}
	}
	b.buf.Write(p)
	if b.keepLast && b.buf.Len() > b.max {
		keep := bytes.Clone(b.buf.Bytes()[b.buf.Len()-b.max:])
		b.buf.Reset()
		b.buf.Write(keep)
	}
	return n, nil
}

// lastLine is the last non-blank line written, quoted and cut to 200
// bytes, as the tail of an error message; empty when nothing was written.
func (b *cappedBuffer) lastLine() string {
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if last == "" {
		return ""
	}
	if len(last) > 200 {
		last = last[:200] + "…"
	}
	return fmt.Sprintf(": %q", last)
}

package main

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"flrh.dev/flrh/store/sealed"
)

// TestKeysFromACommand reads the keyring from a command's output, as from a
// key service's CLI: the keys it prints are the keyring, the first one
// current; a command that fails, hangs, says too much or prints no key is
// refused with an error naming the source and the command's last word on
// standard error, never the command itself or what it printed; and the
// command runs once however many stores the process opens.
func TestKeysFromACommand(t *testing.T) {
	dir := t.TempDir()
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x5a}, 32))
	older := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x17}, 32))
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	counter := filepath.Join(dir, "runs")
	secret := "token-" + strings.Repeat("s", 12) // stands for a credential in the command line

	keysOf := func(t *testing.T, file, command, commandEnv string) (*sealed.Keyring, error) {
		t.Helper()
		encryptionKeyFile, encryptionKeyCommand = file, command
		processKeys.ring = nil
		t.Setenv(encryptionKeyEnv, "")
		t.Setenv(encryptionKeyCommandEnv, commandEnv)
		defer func() { encryptionKeyFile, encryptionKeyCommand = "", "" }()
		s, err := storeSealer()
		if err != nil {
			return nil, err
		}
		return s.(*sealed.Ring).Keyring(), nil
	}
	primary := func(k string) string {
		b, _ := base64.StdEncoding.DecodeString(k)
		return sealed.KeyID(b)
	}

	saved := keyCommandTimeout
	keyCommandTimeout = 2 * time.Second
	defer func() { keyCommandTimeout = saved }()

	for _, c := range []struct {
		name             string
		command, fromEnv string
		primary          string   // the keyring's current key, when it is read
		want             []string // in the error, when it is not
	}{
		{name: "one key", command: "cat " + keyFile, primary: primary(key)},
		{name: "from the variable", fromEnv: "cat " + keyFile, primary: primary(key)},
		{name: "rotation: the first current", command: "printf '# ring\\n%s\\n%s\\n' " + key + " " + older, primary: primary(key)},
		{name: "another key first", command: "echo " + older + "; echo " + key, primary: primary(older)},
		{name: "fails", command: "echo " + key + "; echo 'AccessDeniedException: not allowed' >&2; exit 3 # " + secret,
			want: []string{"--encryption-key-command failed (exit status 3)", `"AccessDeniedException: not allowed"`}},
		{name: "fails, from the variable", fromEnv: "exit 4",
			want: []string{encryptionKeyCommandEnv + " failed (exit status 4)"}},
		{name: "killed", command: "kill -9 $$", want: []string{"failed (signal: killed)"}},
		{name: "hangs", command: "echo waiting for the key service >&2; sleep 30",
			want: []string{"did not finish within 2s", `"waiting for the key service"`}},
		{name: "leaves a child holding its output", command: "echo " + key + "; sleep 30 & exit 0",
			primary: primary(key)},
		{name: "says too much", command: "yes " + key + " | head -c 100000",
			want: []string{"printed more than 64 KiB"}},
		{name: "prints no key", command: "echo not-a-key-" + secret, want: []string{"printed no keyring", "key 1:"}},
		{name: "prints nothing", command: "true", want: []string{"printed no keyring", "no key given"}},
		{name: "a short key", command: "echo " + base64.StdEncoding.EncodeToString([]byte("short")), want: []string{"decodes to 5 bytes"}},
		{name: "no such program", command: "flrh-no-such-key-tool", want: []string{"failed (exit status 127)", "not found"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			k, err := keysOf(t, "", c.command, c.fromEnv)
			if took := time.Since(start); took > 5*time.Second {
				t.Fatalf("took %v", took)
			}
			if c.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if k == nil || k.Primary() != c.primary {
					t.Fatalf("keyring %v, want primary %s", k, c.primary)
				}
				return
			}
			if err == nil {
				t.Fatalf("read a keyring (%v); want an error with %q", k.Primary(), c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			for _, never := range []string{secret, key} {
				if strings.Contains(err.Error(), never) {
					t.Errorf("error %q quotes %q", err, never)
				}
			}
		})
	}

	t.Run("a hung command's children killed too", func(t *testing.T) {
		pidFile := filepath.Join(dir, "child")
		_, err := keysOf(t, "", "sleep 30 & echo $! > "+pidFile+"; wait", "")
		if err == nil || !strings.Contains(err.Error(), "did not finish") {
			t.Fatalf("got %v", err)
		}
		b, _ := os.ReadFile(pidFile)
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatalf("child pid %q: %v", b, err)
		}
		for deadline := time.Now().Add(5 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("the command's child %d outlived it", pid)
			}
		}
	})

	t.Run("more than one source", func(t *testing.T) {
		_, err := keysOf(t, keyFile, "cat "+keyFile, "")
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--encryption-key-file and --encryption-key-command are all set") {
			t.Fatalf("got %v", err)
		}
		_, err = keysOf(t, "", "cat "+keyFile, "cat "+keyFile)
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--encryption-key-command and "+encryptionKeyCommandEnv) {
			t.Fatalf("got %v", err)
		}
	})

	t.Run("asked once", func(t *testing.T) {
		encryptionKeyCommand = "echo run >> " + counter + "; cat " + keyFile
		processKeys.ring = nil
		t.Setenv(encryptionKeyEnv, "")
		t.Setenv(encryptionKeyCommandEnv, "")
		defer func() { encryptionKeyCommand = "" }()
		for range 3 {
			if _, err := storeSealer(); err != nil {
				t.Fatal(err)
			}
		}
		b, _ := os.ReadFile(counter)
		if got := strings.Count(string(b), "run"); got != 1 {
			t.Fatalf("the command ran %d times, want 1", got)
		}
	})
}

// TestCappedBuffer keeps the first bytes, or the last ones, and takes
// everything offered either way.
func TestCappedBuffer(t *testing.T) {
	for _, c := range []struct {
		keepLast bool
		writes   []string
		want     string
		over     bool
	}{
		{false, []string{"abc", "de"}, "abcde", false},
		{false, []string{"abc", "defg", "h"}, "abcde", true},
		{false, []string{"abcdefgh"}, "abcde", true},
		{true, []string{"abc", "defg", "h"}, "defgh", true},
		{true, []string{"abcdefgh"}, "defgh", true},
		{true, []string{"ab"}, "ab", false},
	} {
		b := &cappedBuffer{max: 5, keepLast: c.keepLast}
		for _, w := range c.writes {
			if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("Write(%q) = %d, %v", w, n, err)
			}
		}
		if b.String() != c.want || b.over != c.over {
			t.Errorf("keepLast=%v %q: got %q over=%v, want %q over=%v", c.keepLast, c.writes, b.String(), b.over, c.want, c.over)
		}
	}
}

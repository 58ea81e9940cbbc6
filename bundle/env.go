package bundle

import (
	"fmt"
	"io"
	"os"
	"strings"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/httpadapter"
)

// FileSuffix marks the variable that names a file holding another
// variable's value: PAYMENTS_AUTH_FILE=/run/secrets/payments-auth sets
// PAYMENTS_AUTH to that file's contents. It is the convention container
// platforms use to hand secrets over as mounted files, which unlike the
// environment are not inherited by child processes, shown by process
// listings or copied into crash reports.
const FileSuffix = "_FILE"

// MaxValueFileSize bounds a file read as a variable's value: a credential
// or an endpoint, never a document.
const MaxValueFileSize = 64 << 10

// Env is where a bundle's adapters read their variables (endpoints,
// headers, secret parameters). The zero Env has nothing set.
type Env struct {
	// Getenv answers a variable, "" when it is unset; nil sets nothing.
	Getenv func(string) string
	// ReadFile reads the file a NAME_FILE variable names; nil reads none,
	// so that NAME_FILE means nothing.
	ReadFile func(string) ([]byte, error)
	// Shared holds the limits adapters share with other processes
	// (RegistrySharing); nil holds none.
	Shared httpadapter.Sharer
}

// OSEnv is the process's environment, with NAME_FILE read from disk (a
// regular file of at most MaxValueFileSize bytes).
func OSEnv() Env { return Env{Getenv: os.Getenv, ReadFile: ReadValueFile} }

// Vars is Env without files: getenv alone.
func Vars(getenv func(string) string) Env { return Env{Getenv: getenv} }

// ReadValueFile reads a file holding a variable's value: a regular file
// (a symbolic link to one is followed, as mounted secrets are) of at most
// MaxValueFileSize bytes. It never returns an error quoting the contents.
func ReadValueFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxValueFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxValueFileSize {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, MaxValueFileSize)
	}
	return b, nil
}

// Value is the variable name's value: NAME itself, or, when it is unset
// and NAME_FILE is set (and e reads files), the file's contents less one
// final line break. Both set, a file that cannot be read and an empty
// file are errors naming the variable and the file, never a value.
func (e Env) Value(name string) (string, error) {
	getenv := e.Getenv
	if getenv == nil {
		return "", nil
	}
	path := getenv(name + FileSuffix)
	if path == "" || e.ReadFile == nil {
		return getenv(name), nil
	}
	if getenv(name) != "" {
		return "", fmt.Errorf("bundle: %s and %s%s are both set; set one", name, name, FileSuffix)
	}
	b, err := e.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("bundle: %s%s: %w", name, FileSuffix, err)
	}
	v := string(b)
	if !strings.HasSuffix(v, "\r\n") {
		v = strings.TrimSuffix(v, "\n")
	} else {
		v = v[:len(v)-2]
	}
	if v == "" {
		return "", fmt.Errorf("bundle: %s%s: %s is empty", name, FileSuffix, path)
	}
	return v, nil
}

// Resolve reads every variable the bundle's adapters name (Variables) from
// e and returns the getenv Registry and Secrets take. A variable that is
// unset and whose NAME_FILE is set takes the file's contents, less one
// final line break (files are written with one; a credential never ends
// in one). Both set is an error, as is a file that cannot be read or is
// empty: a deployment that names a secret's file wants that secret, and
// must not quietly run unwired. Errors name variables and files, never a
// value. Variables the bundle does not name are answered by e.Getenv.
func (a *Adapters) Resolve(e Env) (func(string) string, error) {
	getenv := e.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	if e.ReadFile == nil {
		return getenv, nil
	}
	resolved := map[string]string{}
	for _, name := range a.Variables() {
		if getenv(name+FileSuffix) == "" {
			continue
		}
		v, err := e.Value(name)
		if err != nil {
			return nil, err
		}
		resolved[name] = v
	}
	if len(resolved) == 0 {
		return getenv, nil
	}
	return func(name string) string {
		if v, ok := resolved[name]; ok {
			return v
		}
		return getenv(name)
	}, nil
}

// Wire builds the bundle's adapters from e: its variables resolved
// (Resolve), then the registry (Registry). It returns the secrets the
// adapters send, for a shell to scrub from its logs, whenever the
// variables could be read, even when the registry could not be built;
// the error says why the bundle cannot be wired here.
func (a *Adapters) Wire(e Env) (*effect.Registry, []string, error) {
	getenv, err := a.Resolve(e)
	if err != nil {
		return nil, nil, err
	}
	secrets := a.Secrets(getenv)
	reg, err := a.RegistrySharing(getenv, e.Shared)
	return reg, secrets, err
}

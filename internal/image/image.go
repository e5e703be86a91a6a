// Package image builds NebulaCtrl's container image without a container
// daemon, with go-containerregistry: one layer holding the static nebula
// binary, the system's CA certificates, a non-root user and the data
// directory, on an empty base, every file's time fixed, so that the same
// binary makes the same image digest byte for byte. The same image runs
// the control plane (`nebula serve`, its default command) and the agent
// (`nebula agent`, as the install manifests run it).
package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// UID is the unprivileged user the image runs as (the agent's manifests
// require a non-root user with this id).
const UID = 65532

// DataDir is the control plane's data directory in the image, owned by UID.
const DataDir = "/var/lib/nebula"

// Options say what goes into the image.
type Options struct {
	// Binary is the nebula binary, built static for OS/Arch.
	Binary string
	// Arch is the image's architecture (amd64, arm64).
	Arch string
	// Version labels the image.
	Version string
	// CACerts is a PEM bundle of certificate authorities put in
	// /etc/ssl/certs (the control plane calls HTTPS endpoints); "" for
	// none.
	CACerts string
	// Created is the image's creation time, and every file's (default
	// the Unix epoch: SOURCE_DATE_EPOCH's convention for "unknown").
	Created time.Time
}

// Build makes the image.
func Build(o Options) (v1.Image, error) {
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("reading the binary: %w", err)
	}
	var ca []byte
	if o.CACerts != "" {
		if ca, err = os.ReadFile(o.CACerts); err != nil {
			return nil, fmt.Errorf("reading the CA certificates: %w", err)
		}
	}
	at := o.Created
	if at.IsZero() {
		at = time.Unix(0, 0)
	}
	at = at.UTC()
	layerTar, err := rootfs(bin, ca, at)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("making the layer: %w", err)
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS, cfg.Created = o.Arch, "linux", v1.Time{Time: at}
	cfg.Author = "NebulaCtrl"
	cfg.Config = v1.Config{
		Entrypoint: []string{"/nebula"},
		Cmd:        []string{"serve"},
		User:       fmt.Sprintf("%d:%d", UID, UID),
		WorkingDir: DataDir,
		Env: []string{"PATH=/", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
			"NEBULA_ADDR=0.0.0.0:8080", "NEBULA_DATA_DIR=" + DataDir},
		ExposedPorts: map[string]struct{}{"8080/tcp": {}},
		Labels: map[string]string{
			"org.opencontainers.image.title":   "nebula",
			"org.opencontainers.image.version": o.Version,
			"org.opencontainers.image.source":  "https://github.com/nebulactrl/nebula",
		},
	}
	cfg.History = []v1.History{{Created: v1.Time{Time: at}, CreatedBy: "internal/image: nebula " + o.Version, Comment: "the static nebula binary"}}
	return mutate.ConfigFile(img, cfg)
}

// rootfs is the layer's tar: every entry with the same time, owner and
// order, so that the same inputs make the same bytes.
func rootfs(bin, ca []byte, at time.Time) ([]byte, error) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	dir := func(name string, mode int64, uid int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, Uid: uid, Gid: uid, ModTime: at, Format: tar.FormatPAX})
	}
	file := func(name string, mode int64, body []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(body)), ModTime: at,
			Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	steps := []func() error{
		func() error { return dir("etc/", 0o755, 0) },
		func() error {
			return file("etc/passwd", 0o644, fmt.Appendf(nil, "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:%s:/sbin/nologin\n", UID, UID, DataDir))
		},
		func() error { return file("etc/group", 0o644, fmt.Appendf(nil, "root:x:0:\nnonroot:x:%d:\n", UID)) },
		func() error { return dir("etc/ssl/", 0o755, 0) },
		func() error { return dir("etc/ssl/certs/", 0o755, 0) },
		func() error {
			if ca == nil {
				return nil
			}
			return file("etc/ssl/certs/ca-certificates.crt", 0o644, ca)
		},
		func() error { return file("nebula", 0o755, bin) },
		func() error { return dir("tmp/", 0o1777, 0) },
		func() error { return dir("var/", 0o755, 0) },
		func() error { return dir("var/lib/", 0o755, 0) },
		func() error { return dir("var/lib/nebula/", 0o700, UID) },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return nil, fmt.Errorf("writing the layer: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

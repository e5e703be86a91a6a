// Command image writes NebulaCtrl's container image (internal/image) as
// an OCI image layout and a docker-loadable tarball, prints its digest,
// and writes the control plane's Kubernetes manifests pinned to it. No
// container daemon and no registry are involved: push the layout with
// any OCI tool (crane, skopeo, oras). `make image` runs it.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/nebulactrl/nebula/internal/image"
	"github.com/nebulactrl/nebula/internal/install"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run() error {
	var o image.Options
	var repo, out, publicURL string
	flag.StringVar(&o.Binary, "binary", "", "the static linux nebula binary")
	flag.StringVar(&o.Arch, "arch", "amd64", "its architecture")
	flag.StringVar(&o.Version, "version", "dev", "the version it was built as")
	flag.StringVar(&o.CACerts, "ca-certs", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle to put in the image (\"\" for none)")
	flag.StringVar(&repo, "repository", "ghcr.io/nebulactrl/nebula", "the image's repository")
	flag.StringVar(&out, "out", "dist/image", "the directory to write into (replaced)")
	flag.StringVar(&publicURL, "public-url", "https://nebula.example.com", "NEBULA_PUBLIC_URL in the control plane's manifests")
	flag.Parse()
	if o.Binary == "" {
		return fmt.Errorf("-binary is required")
	}
	if _, err := os.Stat(o.CACerts); o.CACerts != "" && err != nil {
		fmt.Fprintf(os.Stderr, "image: no CA bundle at %s: the image will trust no certificate authority\n", o.CACerts)
		o.CACerts = ""
	}
	img, err := image.Build(o)
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	ref, err := name.NewTag(repo + ":" + o.Version)
	if err != nil {
		return fmt.Errorf("the image's name: %w", err)
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	p, err := layout.Write(filepath.Join(out, "oci"), empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": o.Version})); err != nil {
		return err
	}
	if err := tarball.WriteToFile(filepath.Join(out, "nebula.tar"), ref, img); err != nil {
		return err
	}
	pinned := repo + ":" + o.Version + "@" + digest.String()
	manifests, err := install.RenderControlPlane(install.ControlPlane{Image: pinned, Version: o.Version, PublicURL: publicURL})
	if err != nil {
		return err
	}
	files := map[string]string{"digest": digest.String() + "\n", "image": pinned + "\n", "control-plane.yaml": manifests}
	for f, body := range files {
		if err := os.WriteFile(filepath.Join(out, f), []byte(body), 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("%s\n  %s/oci (OCI layout), %s/nebula.tar (docker load), %s/control-plane.yaml\n", pinned, out, out, out)
	return nil
}

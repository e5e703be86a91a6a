package core

import (
	"fmt"

	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/webhook"
)

// CredentialRepository is the repository a Git source's credential was
// given for.
func CredentialRepository(g *model.GitSource) string {
	if g.CredentialRepository != "" {
		return g.CredentialRepository
	}
	return webhook.RepositoryKey(g.Repository) // stored before the binding was kept
}

// GitCredential opens a service's Git credential for a request to
// repository: "" when it has none, or when the repository is not the one
// it was given for (host and path), which never gets it.
func (p *Plane) GitCredential(svc *model.Service, repository string) (string, error) {
	if svc.Git == nil || svc.GitCredential == "" || webhook.RepositoryKey(repository) != CredentialRepository(svc.Git) {
		return "", nil
	}
	return p.OpenGitCredential(svc)
}

// OpenGitCredential opens a service's Git credential ("" for none), for
// whatever asks: a request to its repository, or redaction.
func (p *Plane) OpenGitCredential(svc *model.Service) (string, error) {
	if svc.GitCredential == "" {
		return "", nil
	}
	c, err := p.box.Open(svc.GitCredential, svc.GitBinding())
	if err != nil {
		return "", fmt.Errorf("opening the Git credential of service %s: %w", svc.Name, err)
	}
	return string(c), nil
}

package delivery

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/model"
)

var (
	envVarName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	hostname   = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)+[a-z]([-a-z0-9]*[a-z0-9])?$`)
	// An image repository without tag or digest: registry/path segments.
	imageRepo = regexp.MustCompile(`^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-]+[a-z0-9]+)*)*$`)
)

const (
	maxVariableValue = 32 << 10
	maxReplicas      = 100
)

// Config checks a service's image, processes, variables and domains.
func checkConfig(c *core.Checks, image *string, cfg *model.ServiceConfig) {
	if image != nil && (len(*image) > 255 || !imageRepo.MatchString(*image)) {
		c.Add(core.Invalid(fmt.Sprintf("image %q must be a repository without tag or digest, e.g. registry.example.com/team/app", *image), "input", "image"))
	}
	procs := map[string]*model.Process{}
	if cfg.Processes != nil {
		if len(cfg.Processes) == 0 {
			c.Add(core.Invalid("a service needs at least one process", "input", "processes"))
		}
		if len(cfg.Processes) > 20 {
			c.Add(core.Invalid("a service has at most 20 processes", "input", "processes"))
		}
		for i := range cfg.Processes {
			pr := &cfg.Processes[i]
			c.Name(pr.Name, "process name", "input", "processes", i, "name")
			if procs[pr.Name] != nil {
				c.Add(core.Invalid(fmt.Sprintf("process %q appears twice", pr.Name), "input", "processes", strconv.Itoa(i), "name"))
			}
			procs[pr.Name] = pr
			if pr.Replicas < 0 || pr.Replicas > maxReplicas {
				c.Add(core.Invalid(fmt.Sprintf("replicas must be between 0 and %d", maxReplicas), "input", "processes", strconv.Itoa(i), "replicas"))
			}
			if len(pr.Command) > 100 {
				c.Add(core.Invalid("a command has at most 100 arguments", "input", "processes", strconv.Itoa(i), "command"))
			}
			if pr.Port != nil {
				checkPort(c, *pr.Port, "input", "processes", i, "port")
			}
			if pb := pr.ReadinessProbe; pb != nil {
				checkPort(c, pb.Port, "input", "processes", i, "readinessProbe", "port")
				if pb.Path != nil && !strings.HasPrefix(*pb.Path, "/") {
					c.Add(core.Invalid("a probe path starts with '/'", "input", "processes", strconv.Itoa(i), "readinessProbe", "path"))
				}
				if pb.InitialDelaySeconds < 0 || pb.InitialDelaySeconds > 3600 || pb.PeriodSeconds < 1 || pb.PeriodSeconds > 3600 {
					c.Add(core.Invalid("probe delays are 0-3600 seconds and periods 1-3600 seconds", "input", "processes", strconv.Itoa(i), "readinessProbe"))
				}
			}
		}
	}
	if len(cfg.Domains) > 50 {
		c.Add(core.Invalid("a service has at most 50 domains", "input", "domains"))
	}
	hosts := map[string]bool{}
	for i, d := range cfg.Domains {
		if !hostname.MatchString(d.Host) || len(d.Host) > 253 {
			c.Add(core.Invalid(fmt.Sprintf("domain %q is not a lowercase host name", d.Host), "input", "domains", strconv.Itoa(i), "host"))
		}
		if hosts[d.Host] {
			c.Add(core.Invalid(fmt.Sprintf("domain %q appears twice", d.Host), "input", "domains", strconv.Itoa(i), "host"))
		}
		hosts[d.Host] = true
		switch pr := procs[d.Process]; {
		case pr == nil:
			c.Add(core.Invalid(fmt.Sprintf("domain %q names process %q, which the service does not have", d.Host, d.Process), "input", "domains", strconv.Itoa(i), "process"))
		case pr.Port == nil:
			c.Add(core.Invalid(fmt.Sprintf("domain %q needs process %q to have a port", d.Host, d.Process), "input", "domains", strconv.Itoa(i), "process"))
		}
	}
}

// Variables checks a list of variables given together (a service's).
func checkVariables(c *core.Checks, vars []VariableInput, path ...any) {
	if len(vars) > 200 {
		c.Add(core.Invalid("at most 200 variables", core.FieldPath(path...)...))
	}
	seen := map[string]bool{}
	for i, v := range vars {
		p := append(append([]any{}, path...), i)
		checkVariable(c, v, p...)
		if seen[v.Name] {
			c.Add(core.Invalid(fmt.Sprintf("variable %q appears twice", v.Name), core.FieldPath(append(p, "name")...)...))
		}
		seen[v.Name] = true
	}
}

// Variable checks one variable. The message never quotes the value: it may
// be a secret.
func checkVariable(c *core.Checks, v VariableInput, path ...any) {
	if !envVarName.MatchString(v.Name) || len(v.Name) > 255 {
		c.Add(core.Invalid(fmt.Sprintf("variable name %q must be letters, digits and '_', not starting with a digit", v.Name), core.FieldPath(append(path, "name")...)...))
	}
	if len(v.Value) > maxVariableValue || !utf8.ValidString(v.Value) {
		c.Add(core.Invalid(fmt.Sprintf("the value of %s must be valid text of at most %d bytes", v.Name, maxVariableValue), core.FieldPath(append(path, "value")...)...))
	}
}

func checkPort(c *core.Checks, p int, path ...any) {
	if p < 1 || p > 65535 {
		c.Add(core.Invalid(fmt.Sprintf("port %d must be between 1 and 65535", p), core.FieldPath(path...)...))
	}
}

// VariableInput is a variable as a caller gives it.
type VariableInput struct {
	Name   string
	Value  string
	Secret bool
}

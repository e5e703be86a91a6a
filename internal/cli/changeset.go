package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/nebulactrl/nebula/internal/client"
)

// changesetCommand is `nebula changeset`: several changes to one project —
// variables, secrets, domains, processes, image deploys — reviewed and
// applied as one unit (docs/graphql.md, "Change sets"). A secret's value
// goes to the control plane only: the API never answers it, and nothing
// here prints or logs it.
func changesetCommand(stdout, stderr io.Writer) *cobra.Command {
	cs := &cobra.Command{
		Use:     "changeset",
		Aliases: []string{"cs"},
		Short:   "Change sets: several changes to a project, reviewed and applied as one",
		Long: `A change set groups changes to one project — variables and secrets at any scope, a service's
domains or processes, image deploys — into one reviewable unit: open it, add changes one per
call, preview what applying it would do, submit it, have another project manager (or tenant
admin) approve it, then apply it: every release and deployment in one transaction, one desired
revision per cluster. A set that changes what a protected environment runs must be approved
before it is applied. CHANGESET is the id that open prints.`,
		Example: `  nebula changeset open demo --title "ledger goes live" -o json | jq -r .id
  nebula changeset add CHANGESET --set FEATURE_FLAG=on --service web
  nebula changeset add CHANGESET --set API_KEY="$(cat api-key)" --secret --environment production
  nebula changeset add CHANGESET --domains pay.example.com=web --service web
  nebula changeset add CHANGESET --deploy sha256:4f1c… --service web --environment production
  nebula changeset preview CHANGESET
  nebula changeset submit CHANGESET
  nebula changeset approve CHANGESET --comment "ship it"    # another project manager
  nebula changeset apply CHANGESET`,
		Args: cobra.NoArgs,
	}
	cs.AddCommand(changesetOpen(stdout, stderr), changesetAdd(stdout, stderr), changesetShow(stdout, stderr),
		changesetPreview(stdout, stderr), changesetComment(stdout, stderr))
	type act func(ctx context.Context, c *client.Client, id, comment string) (*client.ChangeSetSummary, []client.Problem, error)
	one := func(use, short, headline string, comments bool, do act) *cobra.Command {
		var (
			r       = remote{stdout: stdout, stderr: stderr}
			comment string
		)
		cmd := &cobra.Command{
			Use:   use + " CHANGESET",
			Short: short,
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				c, err := r.client()
				if err != nil {
					return err
				}
				set, problems, err := do(cmd.Context(), c, args[0], comment)
				if err != nil {
					return explained(err)
				}
				s, err := answered(set, problems)
				if err != nil {
					return err
				}
				return r.printSet(headline, s)
			},
		}
		if comments {
			cmd.Flags().StringVar(&comment, "comment", "", "a comment kept with the decision")
		}
		r.bind(cmd)
		return cmd
	}
	cs.AddCommand(
		one("submit", "Ask for a decision: another project manager or tenant admin approves or rejects it", "Submitted", false,
			func(ctx context.Context, c *client.Client, id, _ string) (*client.ChangeSetSummary, []client.Problem, error) {
				res, err := client.SubmitChangeSet(ctx, c.GQL, id)
				if err != nil {
					return nil, nil, err
				}
				return res.SubmitChangeSet.ChangeSet, res.SubmitChangeSet.UserErrors, nil
			}),
		one("approve", "Approve a submitted change set (project managers, tenant admins; never one of its authors)", "Approved", true,
			func(ctx context.Context, c *client.Client, id, comment string) (*client.ChangeSetSummary, []client.Problem, error) {
				res, err := client.ApproveChangeSet(ctx, c.GQL, id, optional(comment))
				if err != nil {
					return nil, nil, err
				}
				return res.ApproveChangeSet.ChangeSet, res.ApproveChangeSet.UserErrors, nil
			}),
		one("reject", "Reject a submitted change set: it changes nothing", "Rejected", true,
			func(ctx context.Context, c *client.Client, id, comment string) (*client.ChangeSetSummary, []client.Problem, error) {
				res, err := client.RejectChangeSet(ctx, c.GQL, id, optional(comment))
				if err != nil {
					return nil, nil, err
				}
				return res.RejectChangeSet.ChangeSet, res.RejectChangeSet.UserErrors, nil
			}),
		one("apply", "Apply a change set in one transaction: its releases and deployments, one revision per cluster", "Applied", false,
			func(ctx context.Context, c *client.Client, id, _ string) (*client.ChangeSetSummary, []client.Problem, error) {
				res, err := client.ApplyChangeSet(ctx, c.GQL, id)
				if err != nil {
					return nil, nil, err
				}
				return res.ApplyChangeSet.ChangeSet, res.ApplyChangeSet.UserErrors, nil
			}),
		one("rebase", "Take what each change replaces as the project is now (after a refused apply); a submitted set is submitted again", "Rebased", false,
			func(ctx context.Context, c *client.Client, id, _ string) (*client.ChangeSetSummary, []client.Problem, error) {
				res, err := client.RebaseChangeSet(ctx, c.GQL, id)
				if err != nil {
					return nil, nil, err
				}
				return res.RebaseChangeSet.ChangeSet, res.RebaseChangeSet.UserErrors, nil
			}),
		one("close", "End a change set that will not be applied", "Closed", false,
			func(ctx context.Context, c *client.Client, id, _ string) (*client.ChangeSetSummary, []client.Problem, error) {
				res, err := client.CloseChangeSet(ctx, c.GQL, id)
				if err != nil {
					return nil, nil, err
				}
				return res.CloseChangeSet.ChangeSet, res.CloseChangeSet.UserErrors, nil
			}),
	)
	return cs
}

// answered is a change-set mutation's set, or its user errors.
func answered(set *client.ChangeSetSummary, problems []client.Problem) (*client.ChangeSetSummary, error) {
	if err := client.UserErrors(problems); err != nil {
		return nil, err
	}
	if set == nil {
		return nil, errors.New("the control plane answered no change set")
	}
	return set, nil
}

// printSet prints a change set a command made or moved: for scripts the
// set as JSON, for people a line and its deployments.
func (r *remote) printSet(headline string, s *client.ChangeSetSummary) error {
	if r.json() {
		return r.printJSON(s)
	}
	fmt.Fprintf(r.stdout, "%s change set #%d %q (project %s): %s\n", headline, s.Number, s.Title, s.Project.Name, s.State)
	fmt.Fprintf(r.stdout, "  id: %s\n", s.Id)
	if len(s.Changes) == 1 {
		fmt.Fprintln(r.stdout, "  1 change")
	} else {
		fmt.Fprintf(r.stdout, "  %d changes\n", len(s.Changes))
	}
	if s.ExpiresAt != nil && (s.State == client.ChangeSetStateSubmitted || s.State == client.ChangeSetStateApproved) {
		fmt.Fprintf(r.stdout, "  lapses at %s\n", s.ExpiresAt.Local().Format(time.DateTime))
	}
	for _, d := range s.Deployments {
		fmt.Fprintf(r.stdout, "  deployment %s: %s release %d → %s: %s\n", d.Id, d.Release.Service.Name, d.Release.Number, d.Environment.Name, d.Stage)
	}
	return nil
}

func changesetOpen(stdout, stderr io.Writer) *cobra.Command {
	var (
		r     = remote{stdout: stdout, stderr: stderr}
		title string
	)
	cmd := &cobra.Command{
		Use:   "open PROJECT --title TITLE",
		Short: "Open an empty change set in a project (by name or id); prints its id",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if strings.TrimSpace(title) == "" {
				return errors.New("give the change set a --title")
			}
			c, err := r.client()
			if err != nil {
				return err
			}
			project, err := findProject(ctx, c, args[0])
			if err != nil {
				return err
			}
			res, err := client.OpenChangeSet(ctx, c.GQL, project, title)
			if err != nil {
				return explained(err)
			}
			s, err := answered(res.OpenChangeSet.ChangeSet, res.OpenChangeSet.UserErrors)
			if err != nil {
				return err
			}
			return r.printSet("Opened", s)
		},
	}
	cmd.Flags().StringVarP(&title, "title", "t", "", "what the change set does, for its reviewers")
	_ = cmd.MarkFlagRequired("title")
	r.bind(cmd)
	return cmd
}

// findProject is the id of a project the token reads, by name or id.
func findProject(ctx context.Context, c *client.Client, project string) (string, error) {
	ps, err := client.Projects(ctx, c.GQL)
	if err != nil {
		return "", explained(err)
	}
	var ids, names, in []string
	for _, t := range ps.Viewer.Tenants.Nodes {
		for _, p := range t.Projects.Nodes {
			names = append(names, p.Name)
			if p.Name == project || p.Id == project {
				ids, in = append(ids, p.Id), append(in, t.Name)
			}
		}
	}
	switch len(ids) {
	case 1:
		return ids[0], nil
	case 0:
		return "", fmt.Errorf("no project %q that this token can read (it reads %s)", project, orNone(names))
	}
	return "", fmt.Errorf("project %q is in several tenants (%s): name it by id", project, strings.Join(in, ", "))
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// openedSet reads a change set by id.
func openedSet(ctx context.Context, c *client.Client, id string) (*client.ChangeSetDetail, error) {
	res, err := client.ShowChangeSet(ctx, c.GQL, id)
	if err != nil {
		return nil, explained(err)
	}
	s, ok := nodeAs[*client.ShowChangeSetNodeChangeSet](res.Node)
	if !ok || s == nil {
		return nil, fmt.Errorf("no change set %q that this token can read", id)
	}
	return &s.ChangeSetDetail, nil
}

func changesetAdd(stdout, stderr io.Writer) *cobra.Command {
	var (
		r                    = remote{stdout: stdout, stderr: stderr}
		set, del, deploy     string
		domains, processes   string
		secret               bool
		service, environment string
	)
	cmd := &cobra.Command{
		Use:   "add CHANGESET (--set NAME=VALUE [--secret] | --delete NAME | --deploy DIGEST | --domains HOST=PROCESS,… | --processes FILE) [--service S] [--environment E]",
		Short: "Add one change to an open change set",
		Long: `Add one change to an open change set, as its direct mutation would make it (and checked as it
would be, your role included); a change of what an earlier change of the set changes replaces it.
One change per call:

  --set NAME=VALUE        set a variable (--secret: seal it; its value is never shown again)
  --delete NAME           delete a variable
  --deploy DIGEST         deploy an image digest (needs --service and --environment)
  --domains H=P,…         replace a service's domains: host=process pairs ("" removes them all)
  --processes FILE        replace a service's processes: a JSON list of processes as the API's
                          ProcessInput ({"name", "command", "replicas", "port", "readinessProbe"})

A variable's scope is --service or --environment (one of them), else the project's. SERVICE and
ENVIRONMENT are names or ids in the change set's project. A secret's value given on the command
line may stay in the shell's history: prefer --set NAME="$(cat file)" from a safe place.`,
		Example: `  nebula changeset add CHANGESET --set FEATURE_FLAG=on --service web
  nebula changeset add CHANGESET --set DB_PASSWORD="$(cat db-password)" --secret --environment production
  nebula changeset add CHANGESET --delete OLD_FLAG
  nebula changeset add CHANGESET --deploy sha256:4f1c… --service web --environment production
  nebula changeset add CHANGESET --domains pay.example.com=web,api.example.com=api --service web`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			fs := cmd.Flags()
			var kinds []string
			for _, f := range []string{"set", "delete", "deploy"} {
				if fs.Changed(f) {
					kinds = append(kinds, "--"+f)
				}
			}
			if fs.Changed("domains") || fs.Changed("processes") {
				kinds = append(kinds, "--domains/--processes")
			}
			if len(kinds) != 1 {
				return fmt.Errorf("say which change to add, one per call: --set NAME=VALUE, --delete NAME, --deploy DIGEST or --domains/--processes (got %s)", orNone(kinds))
			}
			if secret && !fs.Changed("set") {
				return errors.New("--secret goes with --set NAME=VALUE")
			}
			// Everything given is checked before anything is asked of the
			// control plane.
			var name, value string
			var doms []client.DomainInput
			var procs []client.ProcessInput
			switch kinds[0] {
			case "--set", "--delete":
				if service != "" && environment != "" {
					return fmt.Errorf("%s: a variable's scope is one service (--service), one environment (--environment) or, with neither, the project", kinds[0])
				}
				if kinds[0] == "--delete" {
					name = strings.TrimSpace(del)
					if name == "" {
						return errors.New("--delete takes the variable's NAME")
					}
					break
				}
				var ok bool
				name, value, ok = strings.Cut(set, "=")
				name = strings.TrimSpace(name)
				if !ok || name == "" {
					if secret {
						// The argument may be the secret itself: never repeat it.
						return errors.New("--set takes NAME=VALUE (NAME, an equals sign, then the value)")
					}
					return fmt.Errorf("--set %q: want NAME=VALUE (NAME, an equals sign, then the value)", set)
				}
			case "--deploy":
				if service == "" || environment == "" {
					return errors.New("--deploy DIGEST needs --service and --environment")
				}
				if deploy == "" {
					return errors.New("--deploy takes an image digest, sha256:…")
				}
			default:
				if service == "" || environment != "" {
					return errors.New("--domains and --processes change a service: give --service (and no --environment)")
				}
				if fs.Changed("domains") {
					var err error
					if doms, err = parseDomains(domains); err != nil {
						return err
					}
				}
				if fs.Changed("processes") {
					var err error
					if procs, err = readProcesses(processes); err != nil {
						return err
					}
				}
			}
			c, err := r.client()
			if err != nil {
				return err
			}
			cs, err := openedSet(ctx, c, args[0])
			if err != nil {
				return err
			}
			sc, err := findScope(ctx, c, cs.Project.Id, service, environment)
			if err != nil {
				return err
			}
			var s *client.ChangeSetSummary
			var problems []client.Problem
			switch kinds[0] {
			case "--set":
				res, err := client.SetVariableInChangeSet(ctx, c.GQL, cs.Id, cs.Project.Id, optional(sc.environmentID), optional(sc.serviceID), name, value, secret)
				if err != nil {
					return explained(err)
				}
				s, problems = res.SetVariable.ChangeSet, res.SetVariable.UserErrors
			case "--delete":
				id, err := findVariable(ctx, c, sc, cs.Project.Id, name)
				if err != nil {
					return err
				}
				res, err := client.DeleteVariableInChangeSet(ctx, c.GQL, cs.Id, id)
				if err != nil {
					return explained(err)
				}
				s, problems = res.DeleteVariable.ChangeSet, res.DeleteVariable.UserErrors
			case "--deploy":
				res, err := client.DeployInChangeSet(ctx, c.GQL, cs.Id, sc.serviceID, sc.environmentID, deploy)
				if err != nil {
					return explained(err)
				}
				s, problems = res.Deploy.ChangeSet, res.Deploy.UserErrors
			default:
				res, err := client.UpdateServiceInChangeSet(ctx, c.GQL, cs.Id, sc.serviceID, doms, procs)
				if err != nil {
					return explained(err)
				}
				s, problems = res.UpdateService.ChangeSet, res.UpdateService.UserErrors
			}
			if s, err = answered(s, problems); err != nil {
				return err
			}
			if r.json() {
				return r.printJSON(s)
			}
			if n := len(s.Changes); n > 0 {
				// The change made is the newest: the one it replaced, if
				// any, is gone from the list.
				last := s.Changes[0]
				for _, ch := range s.Changes {
					if ch.Sequence > last.Sequence {
						last = ch
					}
				}
				fmt.Fprintf(stdout, "Change %d: %s\n", last.Sequence, last.Summary)
			}
			return r.printSet("Added to", s)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&set, "set", "", "set a variable: NAME=VALUE")
	fs.BoolVar(&secret, "secret", false, "with --set: a secret, sealed and never shown")
	fs.StringVar(&del, "delete", "", "delete a variable: NAME")
	fs.StringVar(&deploy, "deploy", "", "deploy an image digest, sha256:… (with --service and --environment)")
	fs.StringVar(&domains, "domains", "", `a service's domains: host=process,… ("" removes them all)`)
	fs.StringVar(&processes, "processes", "", "a service's processes: a JSON file")
	fs.StringVarP(&service, "service", "s", "", "the service, by name or id (a variable's scope; the service deployed or changed)")
	fs.StringVarP(&environment, "environment", "e", "", "the environment, by name or id (a variable's scope; where --deploy deploys)")
	r.bind(cmd)
	return cmd
}

// parseDomains reads host=process,… ("" is no domain).
func parseDomains(s string) ([]client.DomainInput, error) {
	out := []client.DomainInput{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		host, process, ok := strings.Cut(strings.TrimSpace(part), "=")
		host, process = strings.TrimSpace(host), strings.TrimSpace(process)
		if !ok || host == "" || process == "" {
			return nil, fmt.Errorf("--domains %q: want host=process pairs separated by commas, e.g. pay.example.com=web", part)
		}
		out = append(out, client.DomainInput{Host: host, Process: process})
	}
	return out, nil
}

// readProcesses reads a JSON list of processes from a file.
func readProcesses(path string) ([]client.ProcessInput, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--processes: %w", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	out := []client.ProcessInput{}
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("--processes %s: want a JSON list of processes ({\"name\", \"command\", \"replicas\", \"port\", \"readinessProbe\"}): %w", path, err)
	}
	return out, nil
}

// scope is a service and an environment (either may be empty) of a
// change set's project, found by name or id.
type scope struct {
	serviceID, service         string
	environmentID, environment string
}

func (s scope) String() string {
	switch {
	case s.serviceID != "" && s.environmentID != "":
		return "service " + s.service + " in environment " + s.environment
	case s.serviceID != "":
		return "service " + s.service
	case s.environmentID != "":
		return "environment " + s.environment
	}
	return "the project"
}

func findScope(ctx context.Context, c *client.Client, project, service, env string) (scope, error) {
	var sc scope
	if service == "" && env == "" {
		return sc, nil
	}
	res, err := client.ProjectTargets(ctx, c.GQL, project)
	if err != nil {
		return sc, explained(err)
	}
	p, ok := nodeAs[*client.ProjectTargetsNodeProject](res.Node)
	if !ok || p == nil {
		return sc, errors.New("the change set's project cannot be read with this token")
	}
	if service != "" {
		var names []string
		for _, s := range p.Services.Nodes {
			names = append(names, s.Name)
			if s.Name == service || s.Id == service {
				sc.serviceID, sc.service = s.Id, s.Name
			}
		}
		if sc.serviceID == "" {
			return sc, fmt.Errorf("project %s has no service %q (it has %s)", p.Name, service, orNone(names))
		}
	}
	if env != "" {
		var names []string
		for _, e := range p.Environments.Nodes {
			names = append(names, e.Name)
			if e.Name == env || e.Id == env {
				sc.environmentID, sc.environment = e.Id, e.Name
			}
		}
		if sc.environmentID == "" {
			return sc, fmt.Errorf("project %s has no environment %q (it has %s)", p.Name, env, orNone(names))
		}
	}
	return sc, nil
}

// findVariable is the id of the variable set at a scope by that name.
func findVariable(ctx context.Context, c *client.Client, sc scope, project, name string) (string, error) {
	node := project
	switch {
	case sc.serviceID != "":
		node = sc.serviceID
	case sc.environmentID != "":
		node = sc.environmentID
	}
	res, err := client.ScopeVariables(ctx, c.GQL, node)
	if err != nil {
		return "", explained(err)
	}
	type variable struct{ id, name string }
	var vars []variable
	if res.Node == nil {
		return "", fmt.Errorf("the scope of %s cannot be read with this token", sc)
	}
	switch n := (*res.Node).(type) {
	case *client.ScopeVariablesNodeProject:
		for _, v := range n.Variables {
			vars = append(vars, variable{v.Id, v.Name})
		}
	case *client.ScopeVariablesNodeEnvironment:
		for _, v := range n.Variables {
			vars = append(vars, variable{v.Id, v.Name})
		}
	case *client.ScopeVariablesNodeService:
		for _, v := range n.Variables {
			vars = append(vars, variable{v.Id, v.Name})
		}
	}
	var names []string
	for _, v := range vars {
		if v.name == name {
			return v.id, nil
		}
		names = append(names, v.name)
	}
	return "", fmt.Errorf("no variable %s is set at the scope of %s (set there: %s)", name, sc, orNone(names))
}

func changesetShow(stdout, stderr io.Writer) *cobra.Command {
	r := remote{stdout: stdout, stderr: stderr}
	cmd := &cobra.Command{
		Use:   "show CHANGESET",
		Short: "Show a change set: its state, its changes and comments (never a secret's value)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := r.client()
			if err != nil {
				return err
			}
			s, err := openedSet(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			if r.json() {
				return r.printJSON(s)
			}
			printSetDetail(stdout, s)
			return nil
		},
	}
	r.bind(cmd)
	return cmd
}

func printSetDetail(w io.Writer, s *client.ChangeSetDetail) {
	when := func(t *time.Time) string { return t.Local().Format(time.DateTime) }
	who := func(email *string) string {
		if email == nil {
			return "someone who left the tenant"
		}
		return *email
	}
	kind := ""
	if s.Direct {
		kind = " (a direct change to a protected environment: applied when approved)"
	}
	fmt.Fprintf(w, "Change set #%d %q (project %s): %s%s\n", s.Number, s.Title, s.Project.Name, s.State, kind)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "  id:\t%s\n", s.Id)
	var author *string
	if s.Author != nil {
		author = &s.Author.Email
	}
	fmt.Fprintf(tw, "  opened:\t%s by %s\n", when(&s.CreatedAt), who(author))
	if s.SubmittedAt != nil {
		fmt.Fprintf(tw, "  submitted:\t%s\n", when(s.SubmittedAt))
	}
	if s.ExpiresAt != nil && (s.State == client.ChangeSetStateSubmitted || s.State == client.ChangeSetStateApproved) {
		fmt.Fprintf(tw, "  lapses:\t%s\n", when(s.ExpiresAt))
	}
	if s.DecidedAt != nil {
		var by *string
		if s.DecidedBy != nil {
			by = &s.DecidedBy.Email
		}
		fmt.Fprintf(tw, "  decided:\t%s by %s\n", when(s.DecidedAt), who(by))
	}
	if s.AppliedAt != nil {
		var by *string
		if s.AppliedBy != nil {
			by = &s.AppliedBy.Email
		}
		fmt.Fprintf(tw, "  applied:\t%s by %s\n", when(s.AppliedAt), who(by))
	}
	_ = tw.Flush()
	if len(s.Changes) == 0 {
		fmt.Fprintln(w, "No change yet: add one with `nebula changeset add`.")
	} else {
		fmt.Fprintln(w, "Changes:")
		for _, ch := range s.Changes {
			line := fmt.Sprintf("  %d. %s", ch.Sequence, ch.Summary)
			switch {
			case ch.Secret:
				line += " (secret: its value is never shown)"
			case ch.Value != nil:
				line += fmt.Sprintf(" = %q", *ch.Value)
			case ch.ImageDigest != nil:
				line += " (" + *ch.ImageDigest + ")"
			}
			if len(ch.Domains) > 0 {
				var ds []string
				for _, d := range ch.Domains {
					ds = append(ds, d.Host+"="+d.Process)
				}
				line += " [" + strings.Join(ds, ", ") + "]"
			}
			var by *string
			if ch.Author != nil {
				by = &ch.Author.Email
			}
			fmt.Fprintf(w, "%s — %s\n", line, who(by))
		}
	}
	if len(s.Comments.Nodes) > 0 {
		fmt.Fprintln(w, "Comments:")
		for _, cm := range s.Comments.Nodes {
			var by *string
			if cm.Author != nil {
				by = &cm.Author.Email
			}
			what := ""
			if cm.Decision != nil {
				what = " " + string(*cm.Decision)
			}
			body := cm.Body
			if body != "" {
				body = ": " + body
			}
			fmt.Fprintf(w, "  %s %s%s%s\n", when(&cm.At), who(by), what, body)
		}
		if s.Comments.PageInfo.HasNextPage {
			fmt.Fprintln(w, "  … the first 100; read the later ones through the API (ChangeSet.comments, after pageInfo.endCursor)")
		}
	}
	if len(s.Deployments) > 0 {
		fmt.Fprintln(w, "Deployments:")
		for _, d := range s.Deployments {
			fmt.Fprintf(w, "  %s: %s release %d → %s: %s\n", d.Id, d.Release.Service.Name, d.Release.Number, d.Environment.Name, d.Stage)
		}
	}
}

func changesetPreview(stdout, stderr io.Writer) *cobra.Command {
	r := remote{stdout: stdout, stderr: stderr}
	cmd := &cobra.Command{
		Use:   "preview CHANGESET",
		Short: "What applying a change set now would do: per cluster, and the releases it would make",
		Long: `What applying a change set now would do, checked as applying is: per cluster the objects added,
changed and removed, and per service and environment the release it would make with what
changes from the release in force (variables and domains by name; a secret never with a value).
Exits 1, naming why, when applying would be refused (a conflict: rebase; a protected environment
not yet approved; a closed set).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := r.client()
			if err != nil {
				return err
			}
			res, err := client.PreviewChangeSet(cmd.Context(), c.GQL, args[0])
			if err != nil {
				return explained(err)
			}
			s, ok := nodeAs[*client.PreviewChangeSetNodeChangeSet](res.Node)
			if !ok || s == nil {
				return fmt.Errorf("no change set %q that this token can read", args[0])
			}
			if r.json() {
				if err := r.printJSON(s); err != nil {
					return err
				}
			} else {
				printSetPreview(stdout, s)
			}
			if err := client.UserErrors(s.Preview.UserErrors); err != nil {
				return fmt.Errorf("applying change set #%d now would be refused: %w", s.Number, err)
			}
			return nil
		},
	}
	r.bind(cmd)
	return cmd
}

func printSetPreview(w io.Writer, s *client.PreviewChangeSetNodeChangeSet) {
	p := s.Preview
	fmt.Fprintf(w, "Change set #%d %q (project %s): %s\n", s.Number, s.Title, s.Project.Name, s.State)
	if len(p.Clusters) == 0 {
		fmt.Fprintln(w, "No cluster's desired state changes.")
	}
	for _, c := range p.Clusters {
		fmt.Fprintf(w, "Cluster %s, revision %d → %d: %d added, %d changed, %d removed\n", c.Cluster.Name, c.FromRevision, c.FromRevision+1,
			len(c.Added), len(c.Changed), len(c.Removed))
		for _, o := range c.Added {
			fmt.Fprintf(w, "  + %s %s/%s\n", o.Kind, o.Namespace, o.Name)
		}
		for _, o := range c.Changed {
			fmt.Fprintf(w, "  ~ %s %s/%s\n", o.Kind, o.Namespace, o.Name)
		}
		for _, o := range c.Removed {
			fmt.Fprintf(w, "  - %s %s/%s\n", o.Kind, o.Namespace, o.Name)
		}
	}
	for _, rel := range p.Releases {
		fmt.Fprintf(w, "Release %d of %s in %s\n", rel.Release.Number, rel.Release.Service.Name, rel.Release.Environment.Name)
		d := rel.Diff
		if d == nil {
			fmt.Fprintf(w, "  image %s (a first release or an image deploy: no diff with the release in force)\n", rel.Release.ImageDigest)
			continue
		}
		if d.Image != nil {
			fmt.Fprintf(w, "  image: %s → %s\n", d.Image.From, d.Image.To)
		}
		for _, v := range d.Variables {
			secret := ""
			if v.Secret {
				secret = " (secret)"
			}
			fmt.Fprintf(w, "  variable %s%s: %s\n", v.Name, secret, v.Change)
		}
		for _, dm := range d.Domains {
			fmt.Fprintf(w, "  domain %s: %s\n", dm.Name, dm.Change)
		}
		for _, pr := range d.Processes {
			fmt.Fprintf(w, "  process %s: %s\n", pr.Name, pr.Change)
		}
		if d.Image == nil && len(d.Variables)+len(d.Domains)+len(d.Processes) == 0 {
			fmt.Fprintln(w, "  the same configuration as the release in force")
		}
	}
}

func changesetComment(stdout, stderr io.Writer) *cobra.Command {
	var (
		r    = remote{stdout: stdout, stderr: stderr}
		body string
	)
	cmd := &cobra.Command{
		Use:   "comment CHANGESET --body TEXT",
		Short: "Comment on a change set",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(body) == "" {
				return errors.New("say something: --body TEXT")
			}
			c, err := r.client()
			if err != nil {
				return err
			}
			res, err := client.CommentOnChangeSet(cmd.Context(), c.GQL, args[0], body)
			if err != nil {
				return explained(err)
			}
			s, err := answered(res.CommentOnChangeSet.ChangeSet, res.CommentOnChangeSet.UserErrors)
			if err != nil {
				return err
			}
			return r.printSet("Commented on", s)
		},
	}
	cmd.Flags().StringVarP(&body, "body", "b", "", "the comment")
	_ = cmd.MarkFlagRequired("body")
	r.bind(cmd)
	return cmd
}

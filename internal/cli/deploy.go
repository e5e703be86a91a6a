package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/nebulactrl/nebula/internal/client"
)

// waitFlags are --wait and --timeout, shared by the commands that make or
// move a deployment.
type waitFlags struct {
	wait    bool
	timeout time.Duration
}

func (w *waitFlags) bind(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&w.wait, "wait", false, "follow the deployment's stages live until it ends: exit 0 at SUCCEEDED, 3 FAILED, 4 ROLLED_BACK, 5 CANCELLED, 6 SUPERSEDED, 124 on --timeout")
	cmd.Flags().DurationVar(&w.timeout, "timeout", 30*time.Minute, "with --wait: how long to wait (an approval's wait included)")
}

// report is what a command that made or moved a deployment prints: its
// summary, then with --wait its stages and how it ended.
type report struct {
	Deployment *client.DeploymentSummary `json:"deployment"`
	Preview    any                       `json:"preview,omitempty"`
	Build      any                       `json:"build,omitempty"`
	Wait       *outcome                  `json:"wait,omitempty"`
}

// finish prints a deployment made or moved, and waits for it when asked.
func (r *remote) finish(ctx context.Context, c *client.Client, rep report, w waitFlags) error {
	d := rep.Deployment
	if !r.json() {
		fmt.Fprintf(r.stdout, "Deployment %s: %s release %d → %s (%s, cluster %s): %s\n", d.Id, d.Release.Service.Name, d.Release.Number,
			d.Environment.Name, d.Environment.Project.Name, d.Cluster.Name, d.Stage)
	}
	var err error
	if w.wait {
		var out outcome
		out, err = r.wait(ctx, c, d.Id, w.timeout)
		rep.Wait = &out
		if !r.json() && err == nil {
			fmt.Fprintf(r.stdout, "SUCCEEDED in %.1f s\n", out.Seconds)
		}
	}
	if r.json() {
		if perr := r.printJSON(rep); perr != nil {
			return perr
		}
	}
	return err
}

func deployCommand(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	var (
		r                  = remote{stdout: stdout, stderr: stderr}
		w                  waitFlags
		env, project       string
		image, commit      string
		branchHead         bool
		preview, dry, sure bool
	)
	cmd := &cobra.Command{
		Use:   "deploy SERVICE --env ENVIRONMENT (--image DIGEST | --commit SHA | --branch-head)",
		Short: "Deploy a service to an environment, and follow it with --wait",
		Long: `Deploy a service to an environment: an image digest built elsewhere, or for a service built from
Git a commit (or the head of its tracked branch), which is built first on the environment's
cluster. SERVICE and ENVIRONMENT are names (or ids); --project says which project when several
have the service. --preview shows what each cluster would get first (and asks on a terminal,
unless --yes); --dry-run shows only that. --wait follows the stages live (through dropped
connections and control-plane restarts) until the deployment ends; a wait for approval in a
protected environment is shown as such.`,
		Example: `  nebula deploy api --env production --image sha256:4f1c… --wait
  nebula deploy api --env staging --commit 9f2c4b7e1a3d5c8e0b6f4a2d9c7e5b3a1f8d6c4e --wait -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			n := 0
			for _, set := range []bool{image != "", commit != "", branchHead} {
				if set {
					n++
				}
			}
			if n != 1 {
				return errors.New("say what to deploy: exactly one of --image DIGEST, --commit SHA or --branch-head")
			}
			c, err := r.client()
			if err != nil {
				return err
			}
			tg, err := findTarget(ctx, c, project, args[0], env)
			if err != nil {
				return err
			}
			if tg.Branch == "" && image == "" {
				return fmt.Errorf("service %s is deployed from images: give --image DIGEST", tg.Service)
			}
			if tg.Branch != "" && image != "" {
				return fmt.Errorf("service %s is built from Git (%s): give --commit SHA or --branch-head", tg.Service, tg.Branch)
			}
			in := client.DeployInput{ServiceId: tg.ServiceID, EnvironmentId: tg.EnvironmentID}
			switch {
			case image != "":
				in.ImageDigest = &image
			case commit != "":
				in.Commit = &commit
			default:
				in.BranchHead = &branchHead
			}
			var rep report
			if preview || dry {
				p, err := client.PreviewDeploy(ctx, c.GQL, in)
				if err != nil {
					return explained(err)
				}
				if err := client.UserErrors(p.PreviewDeploy.UserErrors); err != nil {
					return err
				}
				rep.Preview = p.PreviewDeploy.Clusters
				if !r.json() {
					printPreview(stdout, tg, p.PreviewDeploy.Clusters)
				}
				if dry {
					if r.json() {
						return r.printJSON(rep)
					}
					return nil
				}
				if !sure && r.terminal() && !confirm(stdin, stdout, "Deploy?") {
					return errors.New("not deployed")
				}
			}
			res, err := client.Deploy(ctx, c.GQL, in)
			if err != nil {
				return explained(err)
			}
			if rep.Deployment, err = summary(res.Deploy.Deployment, res.Deploy.UserErrors); err != nil {
				return err
			}
			if b := res.Deploy.Build; b != nil {
				rep.Build = b
				if !r.json() {
					fmt.Fprintf(stdout, "Build %s of commit %s queued.\n", b.Id, b.Commit)
				}
			}
			return r.finish(ctx, c, rep, w)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&env, "env", "e", "", "the environment, by name or id")
	fs.StringVarP(&project, "project", "p", os.Getenv("NEBULA_PROJECT"), "the project, by name or id, when several have the service (NEBULA_PROJECT)")
	fs.StringVar(&image, "image", "", "the image digest to release, sha256:…")
	fs.StringVar(&commit, "commit", "", "a commit (40 hex digits) of a service built from Git")
	fs.BoolVar(&branchHead, "branch-head", false, "build what the service's tracked branch points at now")
	fs.BoolVar(&preview, "preview", false, "show what each cluster would get first")
	fs.BoolVar(&dry, "dry-run", false, "show the preview only; deploy nothing")
	fs.BoolVarP(&sure, "yes", "y", false, "with --preview on a terminal: deploy without asking")
	_ = cmd.MarkFlagRequired("env")
	w.bind(cmd)
	r.bind(cmd)
	return cmd
}

func printPreview(w io.Writer, tg target, clusters []client.PreviewDeployPreviewDeployChangePreviewClustersClusterChange) {
	if len(clusters) == 0 {
		switch {
		case tg.Branch != "":
			fmt.Fprintln(w, "Preview: nothing changes on a cluster yet: the commit is built first on the environment's cluster.")
		case tg.Protected:
			fmt.Fprintln(w, "Preview: nothing changes until another project manager approves it: the environment is protected.")
		default:
			fmt.Fprintln(w, "Preview: nothing changes on any cluster.")
		}
		return
	}
	for _, c := range clusters {
		fmt.Fprintf(w, "Preview: cluster %s, revision %d → %d\n", c.Cluster.Name, c.FromRevision, c.FromRevision+1)
		for _, o := range c.Added {
			fmt.Fprintf(w, "  + %s %s/%s\n", o.Kind, o.Namespace, o.Name)
		}
		for _, o := range c.Changed {
			fmt.Fprintf(w, "  ~ %s %s/%s\n", o.Kind, o.Namespace, o.Name)
		}
		for _, o := range c.Removed {
			fmt.Fprintf(w, "  - %s %s/%s\n", o.Kind, o.Namespace, o.Name)
		}
		for _, h := range c.NowHeld {
			fmt.Fprintf(w, "  ! holds %s: %s\n", h.Service, h.Reason)
		}
	}
}

// confirm asks a yes/no question on a terminal.
func confirm(stdin io.Reader, stdout io.Writer, q string) bool {
	f, ok := stdin.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return false
	}
	fmt.Fprintf(stdout, "%s [y/N] ", q)
	line, _ := bufio.NewReader(stdin).ReadString('\n')
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes"
}

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/nebulactrl/nebula/internal/client"
)

// decisionCommands act on a deployment by its id: approve, reject,
// cancel, redeploy; and rollback, a service's earlier release again.
func decisionCommands(stdout, stderr io.Writer) []*cobra.Command {
	type act func(ctx context.Context, c *client.Client, id, text string) (*client.DeploymentSummary, error)
	one := func(use, short, textFlag, textHelp string, waits bool, do act) *cobra.Command {
		var (
			r    = remote{stdout: stdout, stderr: stderr}
			w    waitFlags
			text string
		)
		cmd := &cobra.Command{
			Use:   use + " DEPLOYMENT",
			Short: short,
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				c, err := r.client()
				if err != nil {
					return err
				}
				d, err := do(cmd.Context(), c, args[0], text)
				if err != nil {
					return err
				}
				return r.finish(cmd.Context(), c, report{Deployment: d}, w)
			},
		}
		if textFlag != "" {
			cmd.Flags().StringVar(&text, textFlag, "", textHelp)
		}
		if waits {
			w.bind(cmd)
		}
		r.bind(cmd)
		return cmd
	}
	approve := one("approve", "Approve a deployment awaiting approval (project managers, tenant admins)", "comment", "a comment kept with the approval", true,
		func(ctx context.Context, c *client.Client, id, text string) (*client.DeploymentSummary, error) {
			res, err := client.Approve(ctx, c.GQL, id, optional(text))
			if err != nil {
				return nil, explained(err)
			}
			p := res.ApproveDeployment
			return summary(p.Deployment, p.UserErrors)
		})
	reject := one("reject", "Reject a deployment awaiting approval; it ends CANCELLED", "comment", "why, kept with the rejection", false,
		func(ctx context.Context, c *client.Client, id, text string) (*client.DeploymentSummary, error) {
			res, err := client.Reject(ctx, c.GQL, id, optional(text))
			if err != nil {
				return nil, explained(err)
			}
			p := res.RejectDeployment
			return summary(p.Deployment, p.UserErrors)
		})
	cancel := one("cancel", "Cancel a deployment that has not ended (one delivered is taken back)", "reason", "why, kept on the deployment", false,
		func(ctx context.Context, c *client.Client, id, text string) (*client.DeploymentSummary, error) {
			res, err := client.Cancel(ctx, c.GQL, id, optional(text))
			if err != nil {
				return nil, explained(err)
			}
			p := res.CancelDeployment
			return summary(p.Deployment, p.UserErrors)
		})
	redeploy := one("redeploy", "Deploy a deployment's release again, as a new deployment", "", "", true,
		func(ctx context.Context, c *client.Client, id, _ string) (*client.DeploymentSummary, error) {
			res, err := client.Redeploy(ctx, c.GQL, id)
			if err != nil {
				return nil, explained(err)
			}
			p := res.Redeploy
			return summary(p.Deployment, p.UserErrors)
		})
	return []*cobra.Command{approve, reject, cancel, redeploy, rollbackCommand(stdout, stderr)}
}

// summary is a decision's deployment, or its user errors.
func summary(d *client.DeploymentSummary, problems []client.Problem) (*client.DeploymentSummary, error) {
	if err := client.UserErrors(problems); err != nil {
		return nil, err
	}
	if d == nil {
		return nil, errors.New("the control plane answered no deployment")
	}
	return d, nil
}

func rollbackCommand(stdout, stderr io.Writer) *cobra.Command {
	var (
		r            = remote{stdout: stdout, stderr: stderr}
		w            waitFlags
		env, project string
		to           int
	)
	cmd := &cobra.Command{
		Use:   "rollback SERVICE --env ENVIRONMENT [--to RELEASE]",
		Short: "Deploy an earlier release of a service again (by default the one before the newest)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := r.client()
			if err != nil {
				return err
			}
			tg, err := findTarget(ctx, c, project, args[0], env)
			if err != nil {
				return err
			}
			if to == 0 {
				rs, err := client.Releases(ctx, c.GQL, tg.ServiceID, tg.EnvironmentID)
				if err != nil {
					return explained(err)
				}
				svc, _ := nodeAs[*client.ReleasesNodeService](rs.Node)
				if svc == nil || len(svc.Releases.Nodes) < 2 {
					return fmt.Errorf("%s has no release in %s before its newest to go back to", tg.Service, tg.Environment)
				}
				to = svc.Releases.Nodes[1].Number
			}
			res, err := client.Rollback(ctx, c.GQL, tg.ServiceID, tg.EnvironmentID, to)
			if err != nil {
				return explained(err)
			}
			d, err := summary(res.Rollback.Deployment, res.Rollback.UserErrors)
			if err != nil {
				return err
			}
			return r.finish(ctx, c, report{Deployment: d}, w)
		},
	}
	cmd.Flags().StringVarP(&env, "env", "e", "", "the environment, by name or id")
	cmd.Flags().StringVarP(&project, "project", "p", os.Getenv("NEBULA_PROJECT"), "the project, by name or id (NEBULA_PROJECT)")
	cmd.Flags().IntVar(&to, "to", 0, "the release number to go back to")
	_ = cmd.MarkFlagRequired("env")
	w.bind(cmd)
	r.bind(cmd)
	return cmd
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

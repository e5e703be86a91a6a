package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/nebulactrl/nebula/internal/client"
)

// loginCommands are login, logout and context: which control planes the
// CLI talks to, with which token.
func loginCommands(stdin io.Reader, stdout, stderr io.Writer) []*cobra.Command {
	var (
		r          = remote{stdout: stdout, stderr: stderr}
		name, ca   string
		tokenStdin bool
		web        bool
	)
	login := &cobra.Command{
		Use:   "login URL",
		Short: "Log in to a control plane, in the browser or with an API token, and keep it as a context",
		Long: `Log in to the control plane at URL. With --web, through the browser: the CLI shows a code and a
link; open it, sign in to the console, confirm that the code is the one shown here, and the CLI
gets a personal API token of yours (90 days). Otherwise with an API token (a personal one, made
on the console's Account page, or an integration's), read from a prompt that does not echo,
from standard input (--token-stdin, or when it is not a terminal), or from NEBULA_TOKEN.
Either way the token is checked, then kept with the URL as a context in the credentials file
($XDG_CONFIG_HOME/nebula/config.json, or NEBULA_CONFIG; mode 0600), and the context becomes the
current one. The token is never printed.`,
		Example: `  nebula login https://nebula.example.com --web
  nebula login https://nebula.example.com
  echo "$NEBULA_TOKEN" | nebula login https://nebula.example.com --name prod --token-stdin`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tlsConf, err := tlsTrusting(ca)
			if err != nil {
				return err
			}
			var token string
			if web {
				token, err = client.BrowserLogin(cmd.Context(), args[0], tlsConf, func(code, link string) {
					fmt.Fprintf(stderr, "Open this page, sign in, and confirm the code:\n\n    %s\n\n  %s\n\nWaiting (the code works for 10 minutes)…\n", code, link)
				})
			} else {
				token, err = readToken(stdin, stderr, tokenStdin)
			}
			if err != nil {
				return explained(err)
			}
			if name == "" {
				u, err := url.Parse(args[0])
				if err != nil || u.Host == "" {
					return fmt.Errorf("%q is not a control plane's URL (https://host)", args[0])
				}
				name = u.Hostname()
			}
			c, err := client.New(args[0], token, client.Options{UserAgent: "nebula-cli/" + Version, TLS: tlsConf})
			if err != nil {
				return err
			}
			v, err := client.Viewer(cmd.Context(), c.GQL)
			if err != nil {
				return explained(err)
			}
			creds, path, err := loadCredentials()
			if err != nil {
				return err
			}
			creds.Contexts[name] = &remoteContext{URL: c.URL(), Token: token, CAFile: ca}
			creds.Current = name
			if err := creds.save(path); err != nil {
				return fmt.Errorf("saving the credentials: %w", err)
			}
			var tenants []string
			for _, t := range v.Viewer.Tenants.Nodes {
				tenants = append(tenants, t.Name)
			}
			if r.json() {
				return r.printJSON(map[string]any{"context": name, "url": c.URL(), "user": v.Viewer.User.Email, "tenants": tenants,
					"credentials": path})
			}
			fmt.Fprintf(stdout, "Logged in to %s as %s (tenants: %s).\nContext %q is current; the token is kept in %s.\n",
				c.URL(), v.Viewer.User.Email, strings.Join(tenants, ", "), name, path)
			return nil
		},
	}
	login.Flags().StringVar(&name, "name", "", "the context's name (default the URL's host)")
	login.Flags().StringVar(&ca, "ca-file", "", "a PEM bundle of certificate authorities to trust for the control plane's TLS certificate")
	login.Flags().BoolVar(&tokenStdin, "token-stdin", false, "read the token from standard input")
	login.Flags().BoolVar(&web, "web", false, "sign in through the browser: confirm the code shown in the console")
	login.Flags().StringVarP(&r.output, "output", "o", "text", "text, or json for scripts")

	var lr = remote{stdout: stdout, stderr: stderr}
	logout := &cobra.Command{
		Use:   "logout",
		Short: "Revoke the context's token on its control plane and forget the context",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			creds, path, err := loadCredentials()
			if err != nil {
				return err
			}
			name := lr.context
			if name == "" {
				name = creds.Current
			}
			if creds.Contexts[name] == nil {
				return fmt.Errorf("no context %q to log out of (contexts: %v)", name, creds.names())
			}
			lr.context = name
			if c, err := lr.client(); err == nil {
				if v, err := client.Viewer(cmd.Context(), c.GQL); err == nil && v.Viewer.Token != nil {
					res, err := client.RevokeToken(cmd.Context(), c.GQL, v.Viewer.Token.Id)
					if err = errors.Join(explained(err), client.UserErrors(res.GetRevokeApiToken().UserErrors)); err != nil {
						fmt.Fprintf(stderr, "nebula: the token could not be revoked (%v); forgetting it here all the same\n", err)
					}
				}
			}
			delete(creds.Contexts, name)
			if creds.Current == name {
				creds.Current = ""
			}
			if err := creds.save(path); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "Logged out of %q.\n", name)
			return nil
		},
	}
	lr.bind(logout)

	contexts := &cobra.Command{
		Use:   "context",
		Short: "List the contexts, or choose the current one",
		Args:  cobra.NoArgs,
	}
	var cr = remote{stdout: stdout, stderr: stderr}
	list := &cobra.Command{
		Use:   "list",
		Short: "List the contexts (never their tokens)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			creds, _, err := loadCredentials()
			if err != nil {
				return err
			}
			type row struct {
				Name    string `json:"name"`
				URL     string `json:"url"`
				Current bool   `json:"current"`
			}
			rows := []row{}
			for _, n := range creds.names() {
				rows = append(rows, row{n, creds.Contexts[n].URL, n == creds.Current})
			}
			if cr.json() {
				return cr.printJSON(rows)
			}
			for _, x := range rows {
				mark := " "
				if x.Current {
					mark = "*"
				}
				fmt.Fprintf(stdout, "%s %-20s %s\n", mark, x.Name, x.URL)
			}
			return nil
		},
	}
	list.Flags().StringVarP(&cr.output, "output", "o", "text", "text, or json for scripts")
	use := &cobra.Command{
		Use:   "use NAME",
		Short: "Make a context the current one",
		Args:  cobra.ExactArgs(1),
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			creds, _, err := loadCredentials()
			if err != nil {
				return nil, cobra.ShellCompDirectiveError
			}
			return creds.names(), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(_ *cobra.Command, args []string) error {
			creds, path, err := loadCredentials()
			if err != nil {
				return err
			}
			if creds.Contexts[args[0]] == nil {
				return fmt.Errorf("no context %q (contexts: %v)", args[0], creds.names())
			}
			creds.Current = args[0]
			if err := creds.save(path); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "Context %q is current.\n", args[0])
			return nil
		},
	}
	contexts.AddCommand(list, use)
	return []*cobra.Command{login, logout, contexts}
}

// readToken reads an API token: from stdin when asked or when stdin is no
// terminal, else NEBULA_TOKEN, else a prompt that does not echo.
func readToken(stdin io.Reader, stderr io.Writer, fromStdin bool) (string, error) {
	f, isFile := stdin.(*os.File)
	tty := isFile && term.IsTerminal(int(f.Fd()))
	var token string
	switch {
	case fromStdin || (!tty && os.Getenv("NEBULA_TOKEN") == ""):
		line, err := bufio.NewReader(io.LimitReader(stdin, 4096)).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("reading the token from standard input: %w", err)
		}
		token = line
	case os.Getenv("NEBULA_TOKEN") != "":
		token = os.Getenv("NEBULA_TOKEN")
	default:
		fmt.Fprint(stderr, "API token (nbt_…): ")
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(stderr)
		if err != nil {
			return "", fmt.Errorf("reading the token: %w", err)
		}
		token = string(b)
	}
	token = strings.TrimSpace(token)
	if token == "" {
		return "", errors.New("no token given: paste an API token (the console's Account page makes one)")
	}
	return token, nil
}

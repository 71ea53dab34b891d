package main

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/api"
)

// healthcheckCommands is `ingot healthcheck`: a container's HEALTHCHECK
// (contrib/container/Containerfile), where there is no curl, asks the
// server it runs beside for GET /healthz, which answers 200 when the bank
// answers a read.
func healthcheckCommands() []*cli.Command {
	return []*cli.Command{{
		Name:  "healthcheck",
		Usage: "ask the server on this host for GET " + api.PathHealth + " (at --listen, INGOT_LISTEN, as serve reads it): exit 0 if the bank answers, 6 if not (a container's HEALTHCHECK)",
		Description: "An address that listens on every interface (0.0.0.0:8080, [::]:8080, :8080) is asked on loopback;\n" +
			"with --tls-cert (INGOT_TLS_CERT) over HTTPS, without checking the certificate, which names the\n" +
			"host as clients reach it: the check sends nothing secret and reads nothing but the status.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8080", EnvVars: []string{"INGOT_LISTEN"}, Usage: "the `ADDRESS` serve listens on"},
			&cli.StringFlag{Name: "tls-cert", EnvVars: []string{"INGOT_TLS_CERT"}, Usage: "serve's --tls-cert: ask over HTTPS"},
			&cli.DurationFlag{Name: "timeout", Value: 5 * time.Second, Usage: "give up after this `LONG`"},
		},
		Action: healthcheck,
	}}
}

func healthcheck(c *cli.Context) error {
	if _, err := args(c); err != nil {
		return err
	}
	f, err := outputFormat(c)
	if err != nil {
		return err
	}
	host, port, err := net.SplitHostPort(c.String("listen"))
	if err != nil {
		return usageError{fmt.Sprintf("healthcheck: --listen %q: %v", c.String("listen"), err)}
	}
	switch ip := net.ParseIP(host); {
	case host == "" || ip != nil && ip.Equal(net.IPv4zero):
		host = "127.0.0.1"
	case ip != nil && ip.Equal(net.IPv6unspecified):
		host = "::1"
	}
	scheme := "http"
	if c.String("tls-cert") != "" {
		scheme = "https"
	}
	url := scheme + "://" + net.JoinHostPort(host, port) + api.PathHealth
	hc := &http.Client{Timeout: c.Duration("timeout"), Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // see the command's description
	}}
	resp, err := hc.Get(url)
	if err != nil {
		return err // a *url.Error: exit 6
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var h api.HealthResponse
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &h) != nil || h.Status != "ok" {
		return fmt.Errorf("healthcheck: %s answered %s: %s: %w", url, resp.Status, body, ledger.ErrUnavailable)
	}
	if f == formatJSON {
		return writeJSON(c.App.Writer, h)
	}
	fmt.Fprintf(c.App.Writer, "ok: %s\n", url)
	return nil
}

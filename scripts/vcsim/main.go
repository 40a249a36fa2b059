// Command vcsim runs govmomi's vCenter simulator for the project's tests.
//
// It is built offline by scripts/build_vcsim.sh against Debian's
// golang-github-vmware-govmomi-dev (GOPATH mode). It serves a VPX model
// (DC0, cluster DC0_C0 with 3 hosts, LocalDS_0) over TLS with the given
// certificate, enforces the given login, serves SPBM at /pbm and at the path
// a real vCenter uses (/pbm/sdk), and serves the vAPI REST endpoints under
// /rest. Once listening it prints one JSON line on stdout (the URL, without
// credentials) and runs until SIGINT or SIGTERM.
//
// SPBM authenticates the way a real vCenter's does: by the vcSessionCookie
// SOAP header, never by the vim HTTP cookie (see spbmSession below).
//
// AuthorizationManager.HasPrivilegeOnEntities answers from the simulator's own
// roles and permissions, as vCenter does, instead of granting everything (see
// privileges.go); the login user holds the Admin role on the root folder.
package main

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/soap"

	// Endpoint simulators register themselves on import.
	_ "github.com/vmware/govmomi/pbm/simulator"
	_ "github.com/vmware/govmomi/vapi/namespace/simulator"
	_ "github.com/vmware/govmomi/vapi/simulator"
)

// spbmEnvelope is the part of a SOAP request SPBM reads its session from.
type spbmEnvelope struct {
	Header struct {
		VcSessionCookie string `xml:"vcSessionCookie"`
	} `xml:"Header"`
}

// spbmSession serves SPBM with the session taken from the request's
// vcSessionCookie SOAP header only, as a real vCenter's SPBM does.
//
// govmomi 0.24.2 maps every endpoint's session from the vmware_soap_session
// HTTP cookie. Upstream changed the pbm simulator to read the vcSessionCookie
// SOAP header instead in v0.47.0 (commit 19189841, "The pbm simulator now
// specifies the vcSessionCookie SOAP Header, behaving as real pbm/VC does";
// test: pbm/client_test.go TestClientCookie, cookie present and header
// missing -> NotAuthenticated). Here the HTTP cookie is dropped and the header's
// value, when present, is handed to the 0.24.2 session lookup as that cookie;
// without it the simulator answers NotAuthenticated to everything but
// PbmRetrieveServiceContent, as upstream does.
func spbmSession(service *simulator.Service, path string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		_ = r.Body.Close()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var envelope spbmEnvelope
		_ = xml.Unmarshal(body, &envelope) // a malformed body gets the simulator's own fault
		r.Header.Del("Cookie")
		if envelope.Header.VcSessionCookie != "" {
			r.AddCookie(&http.Cookie{Name: soap.SessionCookieName, Value: envelope.Header.VcSessionCookie})
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.URL.Path = path
		service.ServeSDK(w, r)
	}
}

// withSpbmSession serves every path with the simulator's own handler, except
// SPBM's (/pbm, and /pbm/sdk where a real vCenter serves it), which go
// through spbmSession.
func withSpbmSession(service *simulator.Service, simulated http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", simulated)
	mux.HandleFunc("/pbm", spbmSession(service, "/pbm"))
	mux.HandleFunc("/pbm/sdk", spbmSession(service, "/pbm"))
	return mux
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "vcsim: "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on (port 0 picks a free one)")
	certFile := flag.String("cert", "", "PEM certificate for TLS (required)")
	keyFile := flag.String("key", "", "PEM private key for TLS (required)")
	username := flag.String("username", "user", "login user name")
	password := flag.String("password", "pass", "login password")
	apiVersion := flag.String("api-version", "7.0.3.0", "vSphere API version the simulator reports")
	hostPackages := flag.String("host-packages", "", "JSON: host name (or \"*\") -> installed software packages (software.go)")
	flag.Parse()

	if *certFile == "" || *keyFile == "" {
		fail("-cert and -key are required")
	}
	cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
	if err != nil {
		fail("loading TLS key pair: %v", err)
	}

	withVcenterPrivileges()
	model := simulator.VPX()
	model.ServiceContent.About.ApiVersion = *apiVersion
	if err := model.Create(); err != nil {
		fail("creating the model: %v", err)
	}
	defer model.Remove()
	evaluatePrivileges(model, *username)
	if err := installSoftware(*hostPackages); err != nil {
		fail("-host-packages: %v", err)
	}

	service := model.Service
	service.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	// The simulator listens on a loopback port of its own; clients reach it only
	// through the front below, which checks SPBM's session as a real vCenter does.
	service.Listen = &url.URL{Host: "127.0.0.1:0", User: url.UserPassword(*username, *password)}
	service.RegisterEndpoints = true

	server := service.NewServer()
	defer server.Close()

	listener, err := tls.Listen("tcp", *listen, &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		fail("listening on %s: %v", *listen, err)
	}
	front := &http.Server{Handler: withSpbmSession(service, server.Config.Handler)}
	go func() { _ = front.Serve(listener) }()
	defer front.Close()

	u := url.URL{Scheme: "https", Host: listener.Addr().String(), Path: server.URL.Path}
	line, _ := json.Marshal(map[string]interface{}{
		"url":         u.String(),
		"host":        u.Hostname(),
		"port":        u.Port(),
		"pbm_path":    "/pbm/sdk",
		"api_version": *apiVersion,
		"pid":         os.Getpid(),
	})
	fmt.Println(string(line))

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	<-signals
}

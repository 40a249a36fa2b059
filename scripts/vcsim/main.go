// Command vcsim runs govmomi's vCenter simulator for the project's tests.
//
// It is built offline by scripts/build_vcsim.sh against Debian's
// golang-github-vmware-govmomi-dev (GOPATH mode). It serves a VPX model
// (DC0, cluster DC0_C0 with 3 hosts, LocalDS_0) over TLS with the given
// certificate, enforces the given login, serves SPBM at /pbm and at the path
// a real vCenter uses (/pbm/sdk), and serves the vAPI REST endpoints under
// /rest. Once listening it prints one JSON line on stdout (the URL, without
// credentials) and runs until SIGINT or SIGTERM.
package main

import (
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"github.com/vmware/govmomi/simulator"

	// Endpoint simulators register themselves on import.
	_ "github.com/vmware/govmomi/pbm/simulator"
	_ "github.com/vmware/govmomi/vapi/namespace/simulator"
	_ "github.com/vmware/govmomi/vapi/simulator"
)

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
	flag.Parse()

	if *certFile == "" || *keyFile == "" {
		fail("-cert and -key are required")
	}
	cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
	if err != nil {
		fail("loading TLS key pair: %v", err)
	}

	model := simulator.VPX()
	model.ServiceContent.About.ApiVersion = *apiVersion
	if err := model.Create(); err != nil {
		fail("creating the model: %v", err)
	}
	defer model.Remove()

	service := model.Service
	service.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	service.Listen = &url.URL{Host: *listen, User: url.UserPassword(*username, *password)}
	service.RegisterEndpoints = true
	// A real vCenter serves SPBM at /pbm/sdk; govmomi's simulator at /pbm.
	service.HandleFunc("/pbm/sdk", func(w http.ResponseWriter, r *http.Request) {
		r.URL.Path = "/pbm"
		service.ServeSDK(w, r)
	})

	server := service.NewServer()
	defer server.Close()

	u := *server.URL
	u.User = nil
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

// The Go side of `deno task bench:request-cost`: what a GET over HTTP/2 and the decoding of one
// watch event cost a Go program, with the standard library only (net/http's HTTP/2 and
// encoding/json, which client-go's transport and decoders are built on), the least a Go operator
// spends on each. Prints one JSON object: each row's CPU (user and system, every thread) per item.
//
//	request_cost KUBECONFIG PATH EVENT_FILE REQUESTS EVENTS CONCURRENCY
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type kubeconfig struct {
	Clusters []struct {
		Cluster struct {
			Server string `json:"server"`
			CA     string `json:"certificate-authority-data"`
		} `json:"cluster"`
	} `json:"clusters"`
	Users []struct {
		User struct {
			Cert string `json:"client-certificate-data"`
			Key  string `json:"client-key-data"`
		} `json:"user"`
	} `json:"users"`
}

// cpu is the process's CPU time so far, every thread's.
func cpu() time.Duration {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		panic(err)
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}

// perItem runs do n times from `concurrency` goroutines and returns the CPU microseconds per call.
func perItem(n, concurrency int, do func()) float64 {
	start := cpu()
	var next int64
	var wg sync.WaitGroup
	for w := 0; w < concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for atomic.AddInt64(&next, 1) <= int64(n) {
				do()
			}
		}()
	}
	wg.Wait()
	return float64((cpu() - start).Microseconds()) / float64(n)
}

// must returns value, or stops the program with err.
func must[T any](value T, err error) T {
	check(err)
	return value
}

// check stops the program with err, if any.
func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func main() {
	if len(os.Args) != 7 {
		fmt.Fprintln(os.Stderr, "usage: request_cost KUBECONFIG PATH EVENT_FILE REQUESTS EVENTS CONCURRENCY")
		os.Exit(2)
	}
	var config kubeconfig
	check(json.Unmarshal(must(os.ReadFile(os.Args[1])), &config))
	decode := func(text string) []byte { return must(base64.StdEncoding.DecodeString(text)) }
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(decode(config.Clusters[0].Cluster.CA))
	cert := must(tls.X509KeyPair(decode(config.Users[0].User.Cert), decode(config.Users[0].User.Key)))
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}},
		ForceAttemptHTTP2: true,
	}}
	url := config.Clusters[0].Cluster.Server + os.Args[2]
	event := must(os.ReadFile(os.Args[3]))
	requests, events, concurrency := must(strconv.Atoi(os.Args[4])), must(strconv.Atoi(os.Args[5])), must(strconv.Atoi(os.Args[6]))

	get := func() {
		request := must(http.NewRequest("GET", url, nil))
		request.Header.Set("Accept", "application/json")
		response := must(client.Do(request))
		body := must(io.ReadAll(response.Body))
		response.Body.Close()
		if response.StatusCode != http.StatusOK {
			fmt.Fprintf(os.Stderr, "GET %s: %d %s\n", url, response.StatusCode, body)
			os.Exit(1)
		}
		var object map[string]any
		check(json.Unmarshal(body, &object))
	}
	parse := func() {
		var object map[string]any
		check(json.Unmarshal(event, &object))
	}
	// Warm: the connection, the pools, the code paths.
	perItem(requests/10+1, concurrency, get)
	perItem(events/10+1, 1, parse)
	out := map[string]float64{
		"get":   perItem(requests, concurrency, get),
		"parse": perItem(events, 1, parse),
	}
	fmt.Println(string(must(json.Marshal(out))))
}

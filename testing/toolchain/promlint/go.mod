// Builds promlint (what `promtool check metrics` runs) to lint our /metrics in tests.
module ptemplate.local/toolchain/promlint

go 1.26.0

require github.com/prometheus/client_golang v1.20.5

require (
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_model v0.6.1 // indirect
	github.com/prometheus/common v0.55.0 // indirect
	google.golang.org/protobuf v1.34.2 // indirect
)

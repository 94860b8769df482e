// A minimal OpenTelemetry Collector for tests: the OTLP receiver (HTTP and gRPC) and contrib's file
// exporter, which writes what arrives as OTLP JSON lines. Its own telemetry is a JSON log on
// stderr only: no metrics server on :8888 that parallel collectors would fight over.
package main

import (
	"context"
	"log"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry"
	"go.uber.org/zap"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter"
)

// telemetryConfig is `service.telemetry`: only the log level can be set.
type telemetryConfig struct {
	Logs struct {
		Level zap.AtomicLevel `mapstructure:"level"`
	} `mapstructure:"logs"`
}

func telemetryFactory() telemetry.Factory {
	return telemetry.NewFactory(
		func() component.Config {
			cfg := &telemetryConfig{}
			cfg.Logs.Level = zap.NewAtomicLevelAt(zap.InfoLevel)
			return cfg
		},
		telemetry.WithCreateLogger(func(_ context.Context, set telemetry.LoggerSettings, cfg component.Config) (*zap.Logger, component.ShutdownFunc, error) {
			zc := zap.NewProductionConfig()
			zc.Level = cfg.(*telemetryConfig).Logs.Level
			zc.Sampling = nil
			build := set.BuildZapLogger
			if build == nil {
				build = func(c zap.Config, opts ...zap.Option) (*zap.Logger, error) { return c.Build(opts...) }
			}
			logger, err := build(zc)
			if err != nil {
				return nil, nil, err
			}
			return logger, func(context.Context) error { _ = logger.Sync(); return nil }, nil
		}),
	)
}

func components() (otelcol.Factories, error) {
	receivers, err := otelcol.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory())
	if err != nil {
		return otelcol.Factories{}, err
	}
	exporters, err := otelcol.MakeFactoryMap[exporter.Factory](fileexporter.NewFactory())
	if err != nil {
		return otelcol.Factories{}, err
	}
	return otelcol.Factories{
		Receivers: receivers,
		Exporters: exporters,
		Telemetry: telemetryFactory(),
	}, nil
}

func main() {
	settings := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{
			Command:     "otelcol",
			Description: "ptemplate-operator's test collector: OTLP in, OTLP JSON lines to a file out",
			Version:     "0.161.0",
		},
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				// `${env:X}` and a bare `${X}` in the config read the environment; `--config` names a file.
				ProviderFactories: []confmap.ProviderFactory{envprovider.NewFactory(), fileprovider.NewFactory()},
			},
		},
	}
	if err := otelcol.NewCommand(settings).Execute(); err != nil {
		log.Fatal(err)
	}
}

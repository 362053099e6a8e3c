"""A framework's tool spans, exported with the real OpenTelemetry Python SDK
and its OTLP/HTTP protobuf exporter, for crates/toolpin-otlp/tests.

usage: otel_exporter.py --endpoint URL [--gzip]

Exports, in one batch, the GenAI `execute_tool` spans an agent framework
emits when it is not behind the proxy: 3 calls of search_orders with
status "open", 2 with "shipped", 2 failed lookup_order calls (error.type
"timeout", status ERROR), and one `chat` span that is not a tool call.
Resource: service.name billing-agent, deployment.environment.name staging,
tenant.id globex. Prints {"exported": true} when the exporter reported
success, {"exported": false} otherwise.
"""

import argparse
import json

from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.trace import Status, StatusCode

CATALOG = "9644aeef" + "0" * 56


class Recording(OTLPSpanExporter):
    """The exporter, remembering whether every export succeeded."""

    ok = True

    def export(self, spans):
        result = super().export(spans)
        Recording.ok = Recording.ok and result == SpanExportResult.SUCCESS
        return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--gzip", action="store_true")
    args = parser.parse_args()
    exporter = Recording(
        endpoint=args.endpoint,
        compression=Compression.Gzip if args.gzip else Compression.NoCompression,
        timeout=10,
    )
    resource = Resource.create(
        {
            "service.name": "billing-agent",
            "deployment.environment.name": "staging",
            "tenant.id": "globex",
        }
    )
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("an-agent-framework")

    def tool(name, arguments, error=None):
        with tracer.start_as_current_span(f"execute_tool {name}") as span:
            span.set_attribute("gen_ai.operation.name", "execute_tool")
            span.set_attribute("gen_ai.tool.name", name)
            span.set_attribute("gen_ai.tool.call.arguments", json.dumps(arguments))
            span.set_attribute("toolpin.catalog.fingerprint", CATALOG)
            if error:
                span.set_attribute("error.type", error)
                span.set_status(Status(StatusCode.ERROR, "the tool timed out"))

    for status in ["open", "open", "shipped", "open", "shipped"]:
        tool("search_orders", {"status": status, "page_size": 20})
    for _ in range(2):
        tool("lookup_order", {"order_id": "A-1"}, error="timeout")
    with tracer.start_as_current_span("chat gpt-4o") as span:
        span.set_attribute("gen_ai.operation.name", "chat")
    provider.shutdown()
    print(json.dumps({"exported": Recording.ok}), flush=True)


if __name__ == "__main__":
    main()

"""An OTLP/HTTP trace receiver on loopback, for tests/it/otlp.rs.

It takes `POST /v1/traces` with a protobuf `ExportTraceServiceRequest` (the message types of
the `opentelemetry-proto` package, OpenTelemetry's own), answers an empty
`ExportTraceServiceResponse`, and prints each span received as one JSON line on stdout:
its name, ids, parent's id, attributes and its resource's attributes. Its first line is the
port it listens on. Anything else is answered 404 (path) or 400 (a body that is not one).
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def value_of(any_value):
    """The plain value an `AnyValue` holds."""
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [value_of(item) for item in any_value.array_value.values]
    if kind is None:
        return None
    return getattr(any_value, kind)


def attributes(pairs):
    return {pair.key: value_of(pair.value) for pair in pairs}


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/v1/traces":
            self.send_error(404)
            return
        request = ExportTraceServiceRequest()
        try:
            request.ParseFromString(body)
        except DecodeError:
            self.send_error(400)
            return
        for resource_spans in request.resource_spans:
            resource = attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    line = {
                        "name": span.name,
                        "trace": span.trace_id.hex(),
                        "id": span.span_id.hex(),
                        "parent": span.parent_span_id.hex(),
                        "attributes": attributes(span.attributes),
                        "resource": resource,
                    }
                    print(json.dumps(line), flush=True)
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *_):
        pass


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())

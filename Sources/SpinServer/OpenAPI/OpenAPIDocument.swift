/// The OpenAPI 3.1 description of the HTTP API, served at `GET /openapi.json`.
///
/// Kept beside the router it describes; the end-to-end suite validates it with
/// openapi-spec-validator and checks that every path it lists answers as it says.
enum OpenAPIDocument {
    static let json = #"""
    {
      "openapi": "3.1.0",
      "info": {
        "title": "Spin server",
        "version": "1.0.0",
        "description": "Hosts named feedback loops (Spins): POST events, read and stream state, watch Gear traffic between Spins. State streams are WebSocket (or SSE with Accept: text/event-stream) and send {\"type\":\"snapshot\"} first, then one {\"type\":\"state\"} message per applied event. Without tokens, every route answers 421 (misdirected_request) to a Host that is not the listen address, a loopback name or in listen.allowedHosts."
      },
      "servers": [{"url": "/"}],
      "security": [{"bearer": []}, {}],
      "paths": {
        "/": {
          "get": {
            "summary": "The dashboard: live state of every Spin, a form to send events, transitions and Gear traffic",
            "security": [],
            "responses": {"200": {"description": "A self-contained HTML page.", "content": {"text/html": {"schema": {"type": "string"}}}}}
          }
        },
        "/healthz": {
          "get": {
            "summary": "Liveness",
            "security": [],
            "responses": {"200": {"description": "The process serves.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Status"}}}}}
          }
        },
        "/readyz": {
          "get": {
            "summary": "Readiness: every Spin recovered and running",
            "security": [],
            "responses": {
              "200": {"description": "Ready.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Status"}}}},
              "503": {"$ref": "#/components/responses/Error"}
            }
          }
        },
        "/metrics": {
          "get": {
            "summary": "Prometheus metrics",
            "responses": {
              "200": {"description": "Prometheus text format 0.0.4.", "content": {"text/plain": {"schema": {"type": "string"}}}},
              "401": {"$ref": "#/components/responses/Error"},
              "403": {"$ref": "#/components/responses/Error"}
            }
          }
        },
        "/openapi.json": {
          "get": {
            "summary": "This document",
            "security": [],
            "responses": {"200": {"description": "OpenAPI 3.1.", "content": {"application/json": {"schema": {"type": "object"}}}}}
          }
        },
        "/v1/spins": {
          "get": {
            "summary": "List the hosted Spins",
            "responses": {
              "200": {"description": "The Spins.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SpinList"}}}},
              "401": {"$ref": "#/components/responses/Error"},
              "403": {"$ref": "#/components/responses/Error"}
            }
          }
        },
        "/v1/spins/{name}": {
          "parameters": [{"$ref": "#/components/parameters/SpinName"}],
          "get": {
            "summary": "A Spin's sequence and state",
            "responses": {
              "200": {"description": "The Spin.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SpinState"}}}},
              "401": {"$ref": "#/components/responses/Error"},
              "403": {"$ref": "#/components/responses/Error"},
              "404": {"$ref": "#/components/responses/Error"}
            }
          }
        },
        "/v1/spins/{name}/events": {
          "parameters": [{"$ref": "#/components/parameters/SpinName"}],
          "post": {
            "summary": "Send one event or an array of events (applied in order, all or none)",
            "parameters": [{
              "name": "wait", "in": "query", "required": false,
              "description": "Answer 200 with the state after the last event instead of 202.",
              "schema": {"type": "boolean"}
            }],
            "requestBody": {
              "required": true,
              "content": {"application/json": {"schema": {
                "oneOf": [
                  {"$ref": "#/components/schemas/Event"},
                  {"type": "array", "minItems": 1, "items": {"$ref": "#/components/schemas/Event"}}
                ]
              }}}
            },
            "responses": {
              "200": {"description": "With wait=true: applied.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Applied"}}}},
              "202": {"description": "Accepted and applied.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Accepted"}}}},
              "400": {"$ref": "#/components/responses/Error"},
              "401": {"$ref": "#/components/responses/Error"},
              "403": {"$ref": "#/components/responses/Error"},
              "404": {"$ref": "#/components/responses/Error"},
              "409": {"description": "spin_suspended: the Spin is suspended by its runaway guard; nothing changed.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
              "413": {"$ref": "#/components/responses/Error"},
              "415": {"$ref": "#/components/responses/Error"},
              "422": {"$ref": "#/components/responses/Error"},
              "429": {"$ref": "#/components/responses/Error"},
              "503": {"$ref": "#/components/responses/Error"}
            }
          }
        },
        "/v1/spins/{name}/resume": {
          "parameters": [{"$ref": "#/components/parameters/SpinName"}],
          "post": {
            "summary": "Run a Spin suspended by its runaway guard (limits.feedbackBudget) again; admin scope. A running Spin stays running",
            "requestBody": {
              "required": false,
              "description": "Events to apply first, before the feedbacks run again (the correction of the runaway); answered once they are applied and durable.",
              "content": {"application/json": {"schema": {
                "oneOf": [
                  {"$ref": "#/components/schemas/Event"},
                  {"type": "array", "minItems": 1, "items": {"$ref": "#/components/schemas/Event"}}
                ]
              }}}
            },
            "responses": {
              "200": {"description": "Running.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Resumed"}}}},
              "400": {"$ref": "#/components/responses/Error"},
              "401": {"$ref": "#/components/responses/Error"},
              "403": {"$ref": "#/components/responses/Error"},
              "404": {"$ref": "#/components/responses/Error"},
              "409": {"$ref": "#/components/responses/Error"},
              "413": {"$ref": "#/components/responses/Error"},
              "415": {"$ref": "#/components/responses/Error"},
              "422": {"$ref": "#/components/responses/Error"},
              "503": {"$ref": "#/components/responses/Error"}
            }
          }
        },
        "/v1/spins/{name}/stream": {
          "parameters": [{"$ref": "#/components/parameters/SpinName"}],
          "get": {
            "summary": "State stream: WebSocket upgrade, or SSE with Accept: text/event-stream",
            "parameters": [
              {"name": "since", "in": "query", "required": false,
               "description": "Resume after this sequence: within the retained history of the same epoch, every state message after it and no snapshot; otherwise a snapshot first. SSE clients may send Last-Event-ID instead.",
               "schema": {"type": "integer", "minimum": 0}},
              {"name": "epoch", "in": "query", "required": false,
               "description": "The epoch the client last saw (every snapshot and state message carries it); another epoch means a snapshot.",
               "schema": {"type": "string"}},
              {"name": "Last-Event-ID", "in": "header", "required": false,
               "description": "SSE resume: the id (sequence) of the last message received.",
               "schema": {"type": "string", "pattern": "^[0-9]+$"}}
            ],
            "responses": {
              "101": {"description": "WebSocket: text frames, a snapshot (or, resuming, the state messages after since) then one state message per applied and durable event, each with the Spin's epoch; client events answered by ack or error."},
              "200": {"description": "Server-sent events, the same messages as data lines; state messages carry id: SEQUENCE.", "content": {"text/event-stream": {"schema": {"type": "string"}}}},
              "400": {"$ref": "#/components/responses/Error"},
              "401": {"$ref": "#/components/responses/Error"},
              "403": {"$ref": "#/components/responses/Error"},
              "404": {"$ref": "#/components/responses/Error"},
              "426": {"$ref": "#/components/responses/Error"}
            }
          }
        },
        "/v1/gears": {
          "get": {
            "summary": "List the hosted Gears and the Spins attached to them",
            "responses": {
              "200": {"description": "The Gears.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/GearList"}}}},
              "401": {"$ref": "#/components/responses/Error"},
              "403": {"$ref": "#/components/responses/Error"}
            }
          }
        },
        "/v1/gears/{name}/stream": {
          "parameters": [{"name": "name", "in": "path", "required": true, "schema": {"type": "string"}}],
          "get": {
            "summary": "WebSocket stream of every event crossing the Gear",
            "responses": {
              "101": {"description": "Text frames {\"type\":\"gear\",\"gear\":..,\"from\":..,\"event\":..}."},
              "401": {"$ref": "#/components/responses/Error"},
              "403": {"$ref": "#/components/responses/Error"},
              "404": {"$ref": "#/components/responses/Error"},
              "426": {"$ref": "#/components/responses/Error"}
            }
          }
        }
      },
      "components": {
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        "parameters": {
          "SpinName": {"name": "name", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"}}
        },
        "responses": {
          "Error": {"description": "An error; nothing changed.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
        },
        "schemas": {
          "Status": {"type": "object", "required": ["status"], "properties": {"status": {"type": "string"}}},
          "Error": {
            "type": "object", "required": ["error"],
            "properties": {"error": {"type": "object", "required": ["code", "message"],
              "properties": {"code": {"type": "string"}, "message": {"type": "string"}}}}
          },
          "Event": {"type": "object", "required": ["type"], "properties": {"type": {"type": "string"}}, "additionalProperties": true},
          "SpinList": {
            "type": "object", "required": ["spins"],
            "properties": {"spins": {"type": "array", "items": {
              "type": "object", "required": ["name", "sequence", "kind"],
              "properties": {"name": {"type": "string"}, "sequence": {"type": "integer", "minimum": 0},
                             "status": {"$ref": "#/components/schemas/SpinStatus"}, "kind": {"type": "string"}}
            }}}
          },
          "SpinStatus": {
            "type": "string", "enum": ["running", "suspended"],
            "description": "suspended: the runaway guard (limits.feedbackBudget) stopped the Spin's feedbacks; its state stays readable and streamed, events get 409 until POST /v1/spins/{name}/resume."
          },
          "SpinState": {
            "type": "object", "required": ["name", "sequence", "status", "state"],
            "properties": {"name": {"type": "string"}, "sequence": {"type": "integer", "minimum": 0},
                           "status": {"$ref": "#/components/schemas/SpinStatus"}, "state": {}}
          },
          "Resumed": {
            "type": "object", "required": ["name", "status"],
            "properties": {"name": {"type": "string"}, "status": {"$ref": "#/components/schemas/SpinStatus"}}
          },
          "Accepted": {
            "type": "object", "required": ["accepted", "sequence"],
            "properties": {"accepted": {"type": "integer", "minimum": 1}, "sequence": {"type": "integer", "minimum": 1}}
          },
          "Applied": {
            "type": "object", "required": ["sequence", "state"],
            "properties": {"sequence": {"type": "integer", "minimum": 1}, "state": {}}
          },
          "GearList": {
            "type": "object", "required": ["gears"],
            "properties": {"gears": {"type": "array", "items": {
              "type": "object", "required": ["name", "attached"],
              "properties": {"name": {"type": "string"}, "attached": {"type": "array", "items": {"type": "string"}}}
            }}}
          }
        }
      }
    }
    """#
}

//! `openapi` sources end to end: lock, check, ls and diff over YAML and
//! JSON documents, a URL fetched with a `${VAR}` header, every bad input
//! (each failing with one located line, exit 2 and the lockfile
//! untouched), conversion settings as part of the pin, and GitHub's real
//! REST description at two published versions.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use common::{located, pinned_names, pinned_tool, Sandbox};
use serde_json::{json, Value};

const PETS_YAML: &str = r##"openapi: 3.0.3
info: {title: Pets, version: "1.0"}
paths:
  /pets:
    get:
      operationId: listPets
      summary: List pets
      tags: [pets]
      parameters:
        - name: limit
          in: query
          schema: {type: integer, default: 20, maximum: 100}
        - name: status
          in: query
          schema: {type: string, enum: [available, sold]}
      responses:
        200:
          description: The pets
          content:
            application/json:
              schema:
                type: array
                items: {$ref: '#/components/schemas/Pet'}
    post:
      operationId: createPet
      description: Adds a pet.
      tags: [pets, write]
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: '#/components/schemas/Pet'}
      responses:
        201: {description: Created}
  /pets/{id}:
    delete:
      operationId: deletePet
      tags: [write]
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
      responses:
        204: {description: Deleted}
components:
  schemas:
    Pet:
      type: object
      required: [name]
      properties:
        name: {type: string}
        tag: {type: string}
"##;

/// A sandbox with `api.yaml` pinned as server `pets` (prefix `pets__`),
/// plus `extra` in its table.
fn pets(extra: &str) -> Sandbox {
    let sb = Sandbox::new();
    sb.write("api.yaml", PETS_YAML);
    sb.write(
        "toolpin.toml",
        format!("[servers.pets]\nopenapi = \"api.yaml\"\nprefix = \"pets__\"\n{extra}"),
    );
    sb
}

#[test]
fn yaml_source_locks_checks_and_lists() {
    let sb = pets("");
    let run = sb.run(&["lock"]);
    run.ok();
    assert!(
        run.stderr
            .starts_with("Pinned 3 tools from 1 server in toolpin.lock (tools ")
            && run.stderr.lines().count() == 1,
        "{}",
        run.stderr
    );
    let lock = sb.read_json("toolpin.lock");
    assert_eq!(lock["servers"]["pets"]["format"], "openapi");
    assert_eq!(
        lock["servers"]["pets"]["source"],
        json!({
            "openapi": "api.yaml",
            "prefix": "pets__",
            "conversion": {"allow_remote_refs": false, "body": "property", "output_schema": true, "version": 1}
        })
    );
    assert_eq!(
        pinned_names(&lock, "pets"),
        ["pets__createPet", "pets__deletePet", "pets__listPets"]
    );
    assert_eq!(
        pinned_tool(&lock, "pets", "pets__listPets"),
        &json!({
            "_meta": {"toolpin/openapi": {"method": "GET", "operationId": "listPets", "path": "/pets"}},
            "description": "List pets",
            "inputSchema": {
                "properties": {
                    "limit": {"default": 20, "maximum": 100, "type": "integer"},
                    "status": {"enum": ["available", "sold"], "type": "string"}
                },
                "type": "object"
            },
            "name": "pets__listPets",
            "outputSchema": {
                "properties": {"result": {
                    "items": {"properties": {"name": {"type": "string"}, "tag": {"type": "string"}}, "required": ["name"], "type": "object"},
                    "type": "array"
                }},
                "required": ["result"],
                "type": "object"
            }
        })
    );
    assert_eq!(
        pinned_tool(&lock, "pets", "pets__createPet")["inputSchema"]["required"],
        json!(["body"])
    );
    let check = sb.run(&["check"]);
    check.ok();
    assert!(
        check
            .stdout
            .starts_with("ok: catalog matches the lockfile (3 tools"),
        "{}",
        check.stdout
    );
    let ls = sb.run(&["ls", "--color", "never"]);
    ls.ok();
    assert_eq!(
        ls.stdout,
        "pets (3 tools, openapi)\n  pets__createPet  Adds a pet.\n  pets__deletePet  Executes DELETE /pets/{id}\n  pets__listPets   List pets\n"
    );
}

#[test]
fn upstream_edits_to_the_document_are_classified_drift() {
    let sb = pets("");
    sb.run(&["lock"]).ok();
    let edited = PETS_YAML
        .replace("default: 20", "default: 50")
        .replace(
            "enum: [available, sold]",
            "enum: [available, sold, adopted]",
        )
        .replace(
            "  /pets/{id}:\n    delete:\n      operationId: deletePet",
            "  /pets/{id}:\n    delete:\n      operationId: removePet",
        );
    sb.write("api.yaml", edited);
    let run = sb.run(&["check", "--format", "json"]);
    run.drift();
    let doc: Value = serde_json::from_str(&run.stdout).expect("findings JSON");
    let got: Vec<(String, String, String)> = doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap_or_default().to_string(),
                f["tool"].as_str().unwrap_or_default().to_string(),
                f["pointer"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let want = [
        (
            "input-default-changed",
            "pets__listPets",
            "/inputSchema/properties/limit/default",
        ),
        (
            "input-enum-value-added",
            "pets__listPets",
            "/inputSchema/properties/status/enum",
        ),
        ("tool-renamed", "pets__removePet", "/name"),
        (
            "field-changed",
            "pets__removePet",
            "/_meta/toolpin~1openapi/operationId",
        ),
    ];
    for (rule, tool, pointer) in want {
        assert!(
            got.iter()
                .any(|(r, t, p)| r == rule && t == tool && p == pointer),
            "no {rule} on {tool} at {pointer} in {got:#?}"
        );
    }
}

#[test]
fn json_source_with_pickers_and_the_runtime_transforms() {
    let sb = Sandbox::new();
    // The document as JSON in a file whose name says nothing: read by
    // content.
    let doc: Value = serde_json::from_str(&pets_json()).expect("json");
    sb.write("api.txt", serde_json::to_string_pretty(&doc).expect("json"));
    sb.write(
        "toolpin.toml",
        "[servers.pets]\nopenapi = \"api.txt\"\ninclude_tags = [\"pets\", \"write\"]\n\
         exclude_paths = [\"DELETE /pets/*\"]\nexclude = [\"create*\"]\nignore = [\"/_meta\"]\n\
         body = \"merge\"\noutput_schema = false\n",
    );
    sb.run(&["lock"]).ok();
    let lock = sb.read_json("toolpin.lock");
    assert_eq!(pinned_names(&lock, "pets"), ["listPets"]);
    let tool = pinned_tool(&lock, "pets", "listPets");
    assert!(
        tool.get("_meta").is_none() && tool.get("outputSchema").is_none(),
        "{tool}"
    );
    assert_eq!(
        lock["servers"]["pets"]["source"]["conversion"],
        json!({"allow_remote_refs": false, "body": "merge", "output_schema": false, "version": 1,
               "include_tags": ["pets", "write"], "exclude_paths": ["DELETE /pets/*"]})
    );
    // Merging puts the body's properties beside the parameters.
    sb.write(
        "toolpin.toml",
        "[servers.pets]\nopenapi = \"api.txt\"\nbody = \"merge\"\ninclude_operations = [\"create*\"]\n",
    );
    sb.run(&["lock"]).ok();
    let lock = sb.read_json("toolpin.lock");
    assert_eq!(
        pinned_tool(&lock, "pets", "createPet")["inputSchema"],
        json!({"properties": {"name": {"type": "string"}, "tag": {"type": "string"}}, "required": ["name"], "type": "object"})
    );
}

/// PETS_YAML as JSON text, written out by hand (the tests read no YAML
/// themselves): the same document.
fn pets_json() -> String {
    json!({
        "openapi": "3.0.3",
        "info": {"title": "Pets", "version": "1.0"},
        "paths": {
            "/pets": {
                "get": {
                    "operationId": "listPets", "summary": "List pets", "tags": ["pets"],
                    "parameters": [
                        {"name": "limit", "in": "query", "schema": {"type": "integer", "default": 20, "maximum": 100}},
                        {"name": "status", "in": "query", "schema": {"type": "string", "enum": ["available", "sold"]}}
                    ],
                    "responses": {"200": {"description": "The pets", "content": {"application/json": {"schema": {"type": "array", "items": {"$ref": "#/components/schemas/Pet"}}}}}}
                },
                "post": {
                    "operationId": "createPet", "description": "Adds a pet.", "tags": ["pets", "write"],
                    "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}},
                    "responses": {"201": {"description": "Created"}}
                }
            },
            "/pets/{id}": {
                "delete": {
                    "operationId": "deletePet", "tags": ["write"],
                    "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
                    "responses": {"204": {"description": "Deleted"}}
                }
            }
        },
        "components": {"schemas": {"Pet": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "tag": {"type": "string"}}}}}
    })
    .to_string()
}

#[test]
fn yaml_and_json_forms_of_one_document_pin_the_same_tools() {
    let yaml = pets("");
    yaml.run(&["lock"]).ok();
    let json_sb = Sandbox::new();
    json_sb.write("api.json", pets_json());
    json_sb.write(
        "toolpin.toml",
        "[servers.pets]\nopenapi = \"api.json\"\nprefix = \"pets__\"\n",
    );
    json_sb.run(&["lock"]).ok();
    let a = yaml.read_json("toolpin.lock");
    let b = json_sb.read_json("toolpin.lock");
    assert_eq!(a["servers"]["pets"]["tools"], b["servers"]["pets"]["tools"]);
    assert_eq!(a["fingerprint"], b["fingerprint"]);
}

/// A one-file HTTP server on 127.0.0.1 for the URL source: answers every
/// GET with `body` when the request carries `Authorization: Bearer
/// <token>`, and otherwise with 401 quoting the header it got (as a
/// careless server would). Stops on drop, and by itself after a minute.
struct DocServer {
    url: String,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl DocServer {
    fn start(body: Vec<u8>, token: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let url = format!(
            "http://127.0.0.1:{}/openapi.json",
            listener.local_addr().expect("addr").port()
        );
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let want = format!("authorization: bearer {}", token.to_ascii_lowercase());
        let handle = thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(60);
            while !flag.load(Ordering::Relaxed) && Instant::now() < deadline {
                let (mut stream, _) = match listener.accept() {
                    Ok(conn) => conn,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        thread::sleep(Duration::from_millis(5));
                        continue;
                    }
                    Err(_) => break,
                };
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let mut request = Vec::new();
                let mut chunk = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut chunk) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => request.extend_from_slice(&chunk[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&request).to_string();
                let auth = text
                    .lines()
                    .find(|l| l.to_ascii_lowercase().starts_with("authorization:"))
                    .unwrap_or("")
                    .to_string();
                if auth.to_ascii_lowercase() == want {
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = stream.write_all(head.as_bytes());
                    let _ = stream.write_all(&body);
                } else {
                    let reply = format!("unauthorized: you sent {auth}");
                    let head = format!(
                        "HTTP/1.1 401 Unauthorized\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
                        reply.len()
                    );
                    let _ = stream.write_all(head.as_bytes());
                }
            }
        });
        Self {
            url,
            stop,
            handle: Some(handle),
        }
    }
}

impl Drop for DocServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

const TOKEN: &str = "s3cret-token-4a7f9c";

#[test]
fn url_source_sends_expanded_headers_and_records_only_references() {
    let server = DocServer::start(pets_json().into_bytes(), TOKEN);
    let sb = Sandbox::new();
    sb.write(
        "toolpin.toml",
        format!(
            "[servers.pets]\nopenapi = \"{}\"\nheaders = {{ Authorization = \"Bearer ${{API_TOKEN}}\", X-Tenant = \"acme\" }}\ntimeout = \"5s\"\n",
            server.url
        ),
    );
    let run = sb.run_env(&["lock"], &[("API_TOKEN", TOKEN)]);
    run.ok();
    let text = sb.read_string("toolpin.lock");
    assert!(!text.contains(TOKEN), "the token reached the lockfile");
    let lock: Value = serde_json::from_str(&text).expect("json");
    assert_eq!(
        lock["servers"]["pets"]["source"],
        json!({
            "openapi": server.url,
            "headers": {"Authorization": "Bearer ${API_TOKEN}", "X-Tenant": "acme"},
            "timeout_ms": 5000,
            "conversion": {"allow_remote_refs": false, "body": "property", "output_schema": true, "version": 1}
        })
    );
    assert_eq!(
        pinned_names(&lock, "pets"),
        ["createPet", "deletePet", "listPets"]
    );
    sb.run_env(&["check"], &[("API_TOKEN", TOKEN)]).ok();

    // A wrong token: the server echoes it, the message does not.
    let wrong = "wrong-token-77c1d2";
    let before = sb.read("toolpin.lock");
    let message = sb.run_env(&["lock"], &[("API_TOKEN", wrong)]).error(&[
        "server \"pets\"",
        "HTTP 401 Unauthorized",
        "Bearer ${API_TOKEN}",
    ]);
    assert!(!message.contains(wrong), "{message}");
    assert_eq!(sb.read("toolpin.lock"), before);

    // bearer_token_env works the same way.
    sb.write(
        "toolpin.toml",
        format!(
            "[servers.pets]\nopenapi = \"{}\"\nbearer_token_env = \"API_TOKEN\"\n",
            server.url
        ),
    );
    sb.run_env(&["lock"], &[("API_TOKEN", TOKEN)]).ok();
    let text = sb.read_string("toolpin.lock");
    assert!(!text.contains(TOKEN));
    assert!(text.contains("\"bearer_token_env\": \"API_TOKEN\""));
}

#[test]
fn url_source_that_cannot_be_reached_is_one_line() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let sb = pets("");
    sb.run(&["lock"]).ok();
    sb.write(
        "toolpin.toml",
        format!("[servers.pets]\nopenapi = \"http://127.0.0.1:{port}/openapi.json\"\n"),
    );
    sb.fails(
        &["lock"],
        &[&format!(
            "cannot read http://127.0.0.1:{port}/openapi.json: GET cannot connect"
        )],
    );
}

/// The pets sandbox, pinned, then `api.yaml` replaced by `doc`.
fn pinned_then(doc: &str) -> Sandbox {
    let sb = pets("");
    sb.run(&["lock"]).ok();
    sb.write("api.yaml", doc);
    sb
}

#[test]
fn bad_input_invalid_yaml_is_located() {
    let sb = pinned_then("openapi: 3.0.3\npaths:\n  /pets:\n    get: [unclosed\n");
    let message = sb.fails(&["lock"], &["invalid YAML"]);
    assert_eq!(located(&message, "api.yaml"), (5, 1), "{message}");
    let sb = pinned_then("openapi: 3.0.3\npaths:\n  /a: {}\n  /a: {}\n");
    let message = sb.fails(&["check"], &["duplicate entry with key \"/a\""]);
    assert_eq!(located(&message, "api.yaml"), (3, 3), "{message}");
}

#[test]
fn bad_input_invalid_json_is_located() {
    let sb = pinned_then("{\n  \"openapi\": \"3.0.3\",\n  \"paths\": {,}\n}\n");
    let message = sb.fails(&["lock"], &["invalid JSON"]);
    assert_eq!(located(&message, "api.yaml"), (3, 13), "{message}");
}

#[test]
fn bad_input_ref_to_nothing_names_the_operation_and_pointer() {
    let sb = pinned_then(&PETS_YAML.replace(
        "items: {$ref: '#/components/schemas/Pet'}",
        "items: {$ref: '#/components/schemas/Animal'}",
    ));
    sb.fails(
        &["lock"],
        &["server \"pets\": api.yaml: operation GET /pets (operationId \"listPets\"): $ref \"#/components/schemas/Animal\" points to nothing (at #/paths/~1pets/get/responses/200/content/application~1json/schema/items)"],
    );
}

#[test]
fn bad_input_ref_cycles_error_and_recursion_is_kept_in_defs() {
    let cycle = PETS_YAML.replace(
        "    Pet:\n      type: object",
        "    Pet: {$ref: '#/components/schemas/Animal'}\n    Animal: {$ref: '#/components/schemas/Pet'}\n    Unused:\n      type: object",
    );
    let sb = pinned_then(&cycle);
    sb.fails(
        &["lock"],
        &["$ref cycle: #/components/schemas/Pet → #/components/schemas/Animal → #/components/schemas/Pet never reaches a schema"],
    );
    // A schema that contains itself is fine: it points into $defs.
    let recursive = PETS_YAML.replace(
        "        tag: {type: string}\n",
        "        tag: {type: string}\n        parent: {$ref: '#/components/schemas/Pet'}\n",
    );
    let sb = pinned_then(&recursive);
    sb.run(&["lock"]).ok();
    let lock = sb.read_json("toolpin.lock");
    let create = &pinned_tool(&lock, "pets", "pets__createPet")["inputSchema"];
    assert_eq!(
        create["properties"]["body"]["properties"]["parent"],
        json!({"$ref": "#/$defs/Pet"})
    );
    assert_eq!(
        create["$defs"]["Pet"]["properties"]["parent"],
        json!({"$ref": "#/$defs/Pet"})
    );
    sb.run(&["check"]).ok();
}

#[test]
fn operation_without_responses_is_converted_without_an_output_schema() {
    let doc = PETS_YAML.replace(
        "      responses:\n        200:\n          description: The pets\n          content:\n            application/json:\n              schema:\n                type: array\n                items: {$ref: '#/components/schemas/Pet'}\n",
        "",
    );
    assert_ne!(doc, PETS_YAML);
    let sb = pinned_then(&doc);
    let run = sb.run(&["lock"]);
    run.ok();
    let lock = sb.read_json("toolpin.lock");
    assert!(pinned_tool(&lock, "pets", "pets__listPets")
        .get("outputSchema")
        .is_none());
}

#[test]
fn duplicate_operation_ids_are_renamed_and_reported() {
    let doc = PETS_YAML.replace("operationId: deletePet", "operationId: listPets");
    let sb = pinned_then(&doc);
    let run = sb.run(&["lock"]);
    run.ok();
    assert!(
        run.stderr.starts_with("warning: server \"pets\": operation DELETE /pets/{id} (operationId \"listPets\"): the tool name \"listPets\" is taken by GET /pets (operationId \"listPets\"); named \"listPets_2\"\n"),
        "{}",
        run.stderr
    );
    let lock = sb.read_json("toolpin.lock");
    assert_eq!(
        pinned_names(&lock, "pets"),
        ["pets__createPet", "pets__listPets", "pets__listPets_2"]
    );
    // Paths in code-point order, methods in the specification's order:
    // GET /pets comes first and keeps the name.
    assert_eq!(
        pinned_tool(&lock, "pets", "pets__listPets_2")["_meta"]["toolpin/openapi"]["method"],
        "DELETE"
    );
    // --quiet keeps the warning off stderr.
    assert_eq!(sb.run(&["lock", "-q"]).stderr, "");
}

#[test]
fn bad_input_not_an_openapi_document() {
    let sb = pinned_then("{\"tools\": [{\"name\": \"a\"}]}");
    sb.fails(
        &["lock"],
        &["server \"pets\": api.yaml: not an OpenAPI document: it has no `openapi` or `swagger` member"],
    );
    let sb = pinned_then("openapi: 2.5.0\n");
    sb.fails(&["lock"], &["unsupported OpenAPI version \"2.5.0\""]);
}

#[test]
fn remote_refs_are_errors_unless_allowed() {
    let doc = PETS_YAML.replace(
        "items: {$ref: '#/components/schemas/Pet'}",
        "items: {$ref: 'https://schemas.example.com/pet.json'}",
    );
    let sb = pinned_then(&doc);
    sb.fails(
        &["lock"],
        &["$ref \"https://schemas.example.com/pet.json\" at #/paths/~1pets/get/responses/200/content/application~1json/schema/items leaves the document; set allow_remote_refs = true"],
    );
    sb.write(
        "toolpin.toml",
        "[servers.pets]\nopenapi = \"api.yaml\"\nprefix = \"pets__\"\nallow_remote_refs = true\n",
    );
    sb.run(&["lock"]).ok();
    let lock = sb.read_json("toolpin.lock");
    assert_eq!(
        pinned_tool(&lock, "pets", "pets__listPets")["outputSchema"]["properties"]["result"]
            ["items"],
        json!({"$ref": "https://schemas.example.com/pet.json"})
    );
}

/// An OpenAPI document of at least `size` bytes: many small operations.
fn big_document(size: usize) -> String {
    let mut doc = String::with_capacity(size + 1024);
    doc.push_str(
        "{\"openapi\": \"3.1.0\", \"info\": {\"title\": \"big\", \"version\": \"1\"}, \"paths\": {",
    );
    let mut i = 0usize;
    while doc.len() < size {
        if i > 0 {
            doc.push(',');
        }
        doc.push_str(&format!(
            "\"/items/{i}\": {{\"get\": {{\"operationId\": \"getItem{i}\", \"description\": \"Returns item {i}; padded to make the document large.\", \"responses\": {{\"200\": {{\"description\": \"ok\"}}}}}}}}"
        ));
        i += 1;
    }
    doc.push_str("}}");
    doc
}

#[test]
fn bad_input_100_mb_document_is_refused_with_the_documented_limit() {
    let doc = big_document(100 << 20);
    let size = doc.len();
    let sb = pets("");
    sb.run(&["lock"]).ok();
    sb.write("api.yaml", &doc);
    sb.fails(
        &["lock"],
        &[&format!("cannot read api.yaml: the document is {size} bytes; toolpin reads OpenAPI documents of up to 67108864 bytes (64 MiB)")],
    );
    // The same over HTTP: refused on its Content-Length, before reading.
    let server = DocServer::start(doc.into_bytes(), TOKEN);
    sb.write(
        "toolpin.toml",
        format!(
            "[servers.pets]\nopenapi = \"{}\"\nbearer_token_env = \"API_TOKEN\"\n",
            server.url
        ),
    );
    let before = sb.read("toolpin.lock");
    sb.run_env(&["lock"], &[("API_TOKEN", TOKEN)])
        .error(&[&format!(
            "the document is {size} bytes; toolpin reads OpenAPI documents of up to 67108864 bytes"
        )]);
    assert_eq!(sb.read("toolpin.lock"), before);
}

#[test]
fn a_document_under_the_limit_with_thousands_of_operations_converts() {
    let sb = pets("");
    sb.write("api.yaml", big_document(2 << 20));
    let run = sb.run(&["lock"]);
    run.ok();
    let lock = sb.read_json("toolpin.lock");
    let count = lock["servers"]["pets"]["tools"]
        .as_object()
        .map_or(0, |m| m.len());
    assert!(count > 10_000, "{count} tools");
}

#[test]
fn changing_a_conversion_setting_is_drift_of_the_catalog() {
    let sb = pets("");
    sb.run(&["lock"]).ok();
    sb.write(
        "toolpin.toml",
        "[servers.pets]\nopenapi = \"api.yaml\"\nprefix = \"pets__\"\nbody = \"merge\"\n",
    );
    let run = sb.run(&["check", "--format", "json"]);
    run.drift();
    let doc: Value = serde_json::from_str(&run.stdout).expect("json");
    let conversion: Vec<&Value> = doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["rule"] == "conversion-changed")
        .collect();
    assert_eq!(conversion.len(), 1, "{:#}", doc["findings"]);
    let f = conversion[0];
    assert_eq!(f["server"], "pets");
    assert_eq!(f["tool"], "");
    assert_eq!(f["pointer"], "/source/conversion/body");
    assert_eq!(f["before"], "property");
    assert_eq!(f["after"], "merge");
    assert_eq!(f["severity"], "medium");
    assert_eq!(
        f["message"],
        "server pets: OpenAPI conversion `body` \"property\" → \"merge\""
    );
    // And the tool it reshaped.
    assert!(doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .any(|f| f["tool"] == "pets__createPet" && f["pointer"] == "/inputSchema/properties/name"));
    // A picker that keeps fewer operations: the setting and the tools.
    sb.write(
        "toolpin.toml",
        "[servers.pets]\nopenapi = \"api.yaml\"\nprefix = \"pets__\"\nexclude_tags = [\"write\"]\n",
    );
    let text = sb.run(&["check", "--color", "never"]);
    text.drift();
    assert!(
        text.stdout
            .contains("conversion-changed  /source/conversion/exclude_tags"),
        "{}",
        text.stdout
    );
    assert!(text
        .stdout
        .contains("server pets: OpenAPI conversion `exclude_tags` unset → [\"write\"]"));
    assert!(
        text.stdout.contains("drift: 0 added, 2 removed"),
        "{}",
        text.stdout
    );
}

#[test]
fn bad_config_openapi_keys_are_validated() {
    let sb = pets("");
    sb.run(&["lock"]).ok();
    let cases: [(&str, &str); 8] = [
        (
            "[servers.pets]\nopenapi = \"api.yaml\"\nbody = \"flat\"\n",
            "servers.pets: `body`: \"flat\" is not a body mode; use \"property\"",
        ),
        (
            "[servers.pets]\nfile = \"tools.json\"\ninclude_tags = [\"x\"]\n",
            "servers.pets: `include_tags` applies to `openapi` sources only",
        ),
        (
            "[servers.pets]\nfile = \"tools.json\"\nbody = \"merge\"\n",
            "servers.pets: `body` applies to `openapi` sources only",
        ),
        (
            "[servers.pets]\nopenapi = \"api.yaml\"\nheaders = { A = \"b\" }\n",
            "servers.pets: `headers` applies to an `openapi` URL (http:// or https://), not a file",
        ),
        (
            "[servers.pets]\nopenapi = \"api.yaml\"\ntransport = \"sse\"\n",
            "servers.pets: `transport` applies to `url` sources only",
        ),
        (
            "[servers.pets]\nopenapi = \"api.yaml\"\ninclude_paths = [\"pets/*\"]\n",
            "servers.pets: `include_paths`: path pattern \"pets/*\" must start with '/'",
        ),
        (
            "[servers.pets]\nopenapi = \"api.yaml\"\nformat = \"mcp\"\n",
            "servers.pets: `format` applies to `file` and `exec` sources only",
        ),
        (
            "[servers.pets]\nopenapi = \"api.yaml\"\nurl = \"http://x/mcp\"\n",
            "servers.pets: set exactly one of `file`, `exec`, `command`, `url`, `openapi` or `record` (found `url` and `openapi`)",
        ),
    ];
    for (config, want) in cases {
        sb.write("toolpin.toml", config);
        sb.fails(&["lock"], &[want]);
    }
    sb.write(
        "toolpin.toml",
        "[servers.pets]\nopenapi = \"api.yaml\"\noutput_shema = false\n",
    );
    let message = sb.fails(&["lock"], &["unknown field `output_shema`"]);
    assert_eq!(located(&message, "toolpin.toml"), (3, 1));
    sb.write(
        "toolpin.toml",
        "[servers.pets]\nopenapi = \"api.yaml\"\noutput_schema = \"no\"\n",
    );
    sb.fails(&["lock"], &["toolpin.toml:3:17: key `output_schema`: invalid type: string \"no\", expected a boolean"]);
}

// --- GitHub's REST description at two published versions -----------------

/// The cached documents (scripts/fetch-openapi-fixtures), if present.
fn github_documents() -> Option<(PathBuf, PathBuf)> {
    let cache = std::env::var_os("TOOLPIN_OPENAPI_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/openapi-cache")
        });
    let old = cache.join("api.github.com-22.0.0.json");
    let new = cache.join("api.github.com-23.0.2.json");
    (old.is_file() && new.is_file()).then_some((old, new))
}

/// `toolpin ARGS` in the sandbox for GitHub's documents: converting two
/// 11–13 MB descriptions and comparing them takes about 12 s unloaded in a
/// debug build, and the two GitHub tests run side by side, so the limit is
/// a loaded machine's rather than `RUN_LIMIT`.
fn run_long(sb: &Sandbox, args: &[&str]) -> common::Run {
    let mut cmd = std::process::Command::new(common::BIN);
    cmd.args(args).current_dir(sb.path());
    common::run_bounded_for(cmd, args, Duration::from_secs(180))
}

/// One line per finding, as the drift rule snapshots print them.
fn finding_line(f: &Value) -> String {
    let s = |k: &str| f[k].as_str().unwrap_or_default().to_string();
    format!(
        "{} {} {} {} :: {}",
        s("severity"),
        s("rule"),
        s("tool"),
        s("pointer"),
        s("message")
    )
}

#[test]
fn github_rest_description_22_to_23_real_differences() {
    let Some((old, new)) = github_documents() else {
        eprintln!(
            "SKIPPED github_rest_description_22_to_23_real_differences: GitHub's OpenAPI description is not in target/openapi-cache; run scripts/fetch-openapi-fixtures (scripts/setup does)"
        );
        return;
    };
    let sb = Sandbox::new();
    for (name, path) in [("v22", &old), ("v23", &new)] {
        sb.write(
            &format!("{name}.toml"),
            format!(
                "[servers.github]\nopenapi = {:?}\n",
                path.display().to_string()
            ),
        );
        let run = run_long(
            &sb,
            &[
                "lock",
                "-c",
                &format!("{name}.toml"),
                "--lockfile",
                &format!("{name}.lock"),
            ],
        );
        run.ok();
        // The lockfile is what serde_json's pretty printer would write.
        let text = sb.read_string(&format!("{name}.lock"));
        let parsed: Value = serde_json::from_str(&text).expect("lockfile JSON");
        assert_eq!(
            serde_json::to_string_pretty(&parsed).expect("pretty") + "\n",
            text
        );
    }
    let count = |name: &str| {
        sb.read_json(&format!("{name}.lock"))["servers"]["github"]["tools"]
            .as_object()
            .map_or(0, |m| m.len())
    };
    // One tool per operation: 1,108 in 22.0.0 and 1,223 in 23.0.2.
    assert_eq!((count("v22"), count("v23")), (1108, 1223));

    let run = run_long(&sb, &["diff", "v22.lock", "v23.lock", "--format", "json"]);
    run.drift();
    let doc: Value = serde_json::from_str(&run.stdout).expect("findings JSON");
    let summary = &doc["summary"];
    // 37 operations removed and 152 added; no removed (method, path) comes
    // back under a new operationId, so none is a rename. (Before issue 13,
    // two unrelated pairs with identical `{org}` / `{owner, repo}` inputs
    // were paired as renames.)
    assert_eq!(
        (&summary["tools_added"], &summary["tools_removed"]),
        (&json!(152), &json!(37)),
        "{summary}"
    );
    let renamed: Vec<&Value> = doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["rule"] == "tool-renamed")
        .collect();
    assert!(renamed.is_empty(), "{renamed:?}");
    // Hand-checked against the two documents (docs/openapi.md lists them):
    // teams discussions removed, agent tasks added, a default that became
    // a string, an enum value added, a string that became a union's branch
    // beside an object form, a pattern and bound changed.
    let picked = [
        "teams_list-discussions-in-org",
        "agent-tasks_list-tasks-for-repo",
        "repos_update-release",
        "code-scanning_update-alert",
        "issues_update",
        "code-scanning_upload-sarif",
    ];
    let lines: Vec<String> = doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| picked.contains(&f["tool"].as_str().unwrap_or_default()))
        .filter(|f| {
            let p = f["pointer"].as_str().unwrap_or_default();
            p.is_empty() || p.starts_with("/inputSchema")
        })
        .map(finding_line)
        .collect();
    let must = [
        "critical tool-removed teams_list-discussions-in-org  :: teams_list-discussions-in-org: tool removed",
        "high input-default-changed repos_update-release /inputSchema/properties/body/properties/make_latest/default :: repos_update-release: /inputSchema/properties/body/properties/make_latest default true → \"true\"",
        "medium input-enum-value-added code-scanning_update-alert /inputSchema/properties/body/properties/dismissed_reason/enum :: code-scanning_update-alert: /inputSchema/properties/body/properties/dismissed_reason gains \"mitigated\"",
        // Issue 34: the nullable string became the first branch of a
        // nullable `oneOf` with an object form: one branch added, never
        // "any type" (the `nullable` beside the union once kept the string
        // from pairing with its branch).
        "low input-union-branch-added issues_update /inputSchema/properties/body/properties/type/oneOf/1 :: issues_update: oneOf branch #1 added at /inputSchema/properties/body/properties/type",
        "medium input-pattern-changed code-scanning_upload-sarif /inputSchema/properties/body/properties/commit_sha/pattern :: code-scanning_upload-sarif: /inputSchema/properties/body/properties/commit_sha pattern \"^[0-9a-fA-F]+$\" → \"^([0-9a-fA-F]{40}(?:[0-9a-fA-F]{24})?)$\"",
    ];
    for line in must {
        assert!(
            lines.iter().any(|l| l == line),
            "missing {line}\nin\n{}",
            lines.join("\n")
        );
    }
    assert!(
        lines.iter().any(|l| l.contains(" tool-added agent-tasks_list-tasks-for-repo  :: agent-tasks_list-tasks-for-repo: new tool")),
        "{}",
        lines.join("\n")
    );
    insta::assert_snapshot!("github_22_to_23", lines.join("\n"));
    triage(&sb, &doc);
}

/// One cached GitHub document (scripts/fetch-openapi-fixtures), if present.
fn github_document(version: &str) -> Option<PathBuf> {
    let (old, _) = github_documents()?;
    let path = old.with_file_name(format!("api.github.com-{version}.json"));
    path.is_file().then_some(path)
}

/// Issue 34: GitHub's REST description at 16.0.0, 19.0.0 and 23.0.2, diffed
/// straight from the documents. Hand-checked against them: the
/// access-restriction bodies went from a one-branch `oneOf` to the branch
/// itself and became required; result objects such as `owner` went from a
/// nullable `Simple User` to a `oneOf` of it and `Enterprise`, their prose
/// moving with them; `issues_update`'s `type` lost its `example`.
#[test]
fn github_rest_description_16_to_19_to_23_rewraps_and_examples() {
    let (Some(v16), Some(v19), Some(v23)) = (
        github_document("16.0.0"),
        github_document("19.0.0"),
        github_document("23.0.2"),
    ) else {
        eprintln!(
            "SKIPPED github_rest_description_16_to_19_to_23_rewraps_and_examples: GitHub's OpenAPI descriptions are not in target/openapi-cache; run scripts/fetch-openapi-fixtures (scripts/setup does)"
        );
        return;
    };
    let sb = Sandbox::new();
    let diff = |old: &PathBuf, new: &PathBuf| -> Vec<Value> {
        let (old, new) = (old.display().to_string(), new.display().to_string());
        let run = run_long(&sb, &["diff", &old, &new, "--format", "json"]);
        run.drift();
        let doc: Value = serde_json::from_str(&run.stdout).expect("findings JSON");
        doc["findings"].as_array().expect("findings").clone()
    };
    let of_tool = |findings: &[Value], tool: &str, under: &str| -> Vec<String> {
        findings
            .iter()
            .filter(|f| f["tool"] == tool)
            .filter(|f| f["pointer"].as_str().unwrap_or_default().starts_with(under))
            .map(finding_line)
            .collect()
    };
    let first = diff(&v16, &v19);
    let second = diff(&v19, &v23);

    // The union of one branch unwrapped is no change; the body now required
    // is the one input finding (before issue 34, its description and
    // example were also reported added at the body and removed inside it).
    for op in ["add", "remove", "set"] {
        for what in ["app", "user"] {
            let tool = format!("repos_{op}-{what}-access-restrictions");
            assert_eq!(
                of_tool(&first, &tool, "/inputSchema"),
                [format!("high input-required-property-added {tool} /inputSchema/required :: {tool}: argument `body` became required")],
            );
        }
    }
    // The nullable owner became a union's first branch: it pairs with that
    // branch, so what changed inside it is reported, and `Enterprise` is
    // the one branch added; its title and description moved with it.
    let owner = "/outputSchema/properties/result/items/properties/performed_via_github_app/properties/owner";
    let lines = of_tool(&first, "actions_review-pending-deployments-for-run", owner);
    let at = |rule: &str, rest: &str| {
        lines
            .iter()
            .any(|l| l.contains(&format!(" {rule} ")) && l.contains(&format!("{owner}{rest} ")))
    };
    assert!(at("output-union-branch-added", "/oneOf/1"), "{lines:#?}");
    assert!(
        at(
            "output-property-added",
            "/oneOf/0/properties/user_view_type"
        ),
        "{lines:#?}"
    );
    assert!(at("field-changed", "/oneOf/0/type"), "{lines:#?}");
    assert!(!at("output-union-branch-added", "/oneOf/0"), "{lines:#?}");
    assert!(
        !lines
            .iter()
            .any(|l| l.contains("property-description-changed")),
        "{lines:#?}"
    );

    // `issues_update`'s nullable string `type` became the first branch of
    // a nullable `oneOf` beside an object form, its `example` moving into
    // the branch: the branch added and the prose edits, no example lost
    // and no "any type".
    let issue_type = of_tool(
        &second,
        "issues_update",
        "/inputSchema/properties/body/properties/type",
    );
    assert_eq!(
        issue_type.iter().map(|l| l.split(" :: ").next().unwrap_or_default()).collect::<Vec<_>>(),
        [
            "medium property-description-changed issues_update /inputSchema/properties/body/properties/type/description",
            "medium property-description-changed issues_update /inputSchema/properties/body/properties/type/oneOf/0/description",
            "low input-union-branch-added issues_update /inputSchema/properties/body/properties/type/oneOf/1",
        ],
        "{issue_type:#?}"
    );
    // An `example` is prose: its edits are word diffs (GitHub moved the
    // `avatar_url` examples to a new host). These releases edit examples in
    // results only, which the model is not handed: low, as the loop below
    // checks; the fixtures example-changed and example-gains-steering pin
    // the input side (medium, critical with steering text).
    let examples: Vec<&Value> = first
        .iter()
        .chain(&second)
        .filter(|f| {
            f["pointer"]
                .as_str()
                .is_some_and(|p| p.ends_with("/example"))
        })
        .collect();
    assert!(examples.len() >= 100, "{} example edits", examples.len());
    for f in &examples {
        assert_eq!(f["rule"], "property-description-changed", "{f}");
        let message = f["message"].as_str().unwrap_or_default();
        assert!(message.contains("[-") || message.contains("{+"), "{f}");
    }
    // Prose in an outputSchema, which the model is not handed, is low.
    for f in first.iter().chain(&second) {
        if f["rule"] == "property-description-changed"
            && f["pointer"]
                .as_str()
                .is_some_and(|p| p.starts_with("/outputSchema"))
        {
            assert_eq!(f["severity"], "low", "{f}");
        }
    }
    // The ruleset bodies' changes, each at its pointer, kept as a snapshot.
    let picked: Vec<String> = [
        "repos_create-org-ruleset",
        "repos_add-app-access-restrictions",
    ]
    .iter()
    .flat_map(|t| of_tool(&first, t, "/inputSchema"))
    .chain(of_tool(&second, "issues_update", "/inputSchema"))
    .collect();
    insta::assert_snapshot!("github_16_to_19_to_23", picked.join("\n"));
}

/// Issue 15: the same pair read as an on-call engineer reads it, on the
/// lockfiles `github_rest_description_22_to_23_real_differences` made
/// (converting once is what keeps that test within the run limit).
/// Figures at 22fb374 (before clusters): 27,274 text lines, 2,226,379
/// Markdown bytes, 106 critical.
fn triage(sb: &Sandbox, doc: &Value) {
    let (old, new) = ("v22.lock".to_string(), "v23.lock".to_string());
    let findings = doc["findings"].as_array().expect("findings");
    let clusters = doc["clusters"].as_array().expect("clusters");
    // Every member points back at its cluster, and no finding is in two.
    let mut seen = std::collections::HashSet::new();
    for k in clusters {
        let members = k["findings"].as_array().expect("members");
        assert!(members.len() >= 2, "{k}");
        for m in members {
            let i = m.as_u64().expect("index") as usize;
            assert!(seen.insert(i), "finding {i} is in two clusters");
            assert_eq!(findings[i]["cluster"], k["id"]);
            assert_eq!(findings[i]["rule"], k["rule"]);
        }
    }
    let clustered = findings
        .iter()
        .filter(|f| f.get("cluster").is_some())
        .count();
    // What remains critical is what the model is handed: removed tools and
    // tool descriptions that gained a steering cue (here, a URL). Nothing
    // in an outputSchema (before issue 15: 51 there, raised by "only").
    let critical: Vec<&Value> = findings
        .iter()
        .filter(|f| f["severity"] == "critical")
        .collect();
    eprintln!("github 22 -> 23: {} critical", critical.len());
    for f in &critical {
        assert_eq!(f["model_reads"], true, "{f}");
        match f["rule"].as_str() {
            Some("tool-removed") => {}
            Some("description-changed") => {
                assert!(
                    f["message"].as_str().is_some_and(|m| m.contains("URL: ")),
                    "{f}"
                )
            }
            _ => panic!("unexpected critical: {f}"),
        }
    }
    assert!(critical.len() <= 50, "{} critical", critical.len());
    assert_eq!(clustered, seen.len());
    let largest = clusters
        .iter()
        .map(|k| k["tools"].as_array().map_or(0, Vec::len))
        .max()
        .unwrap_or(0);
    eprintln!(
        "github 22 -> 23: {} findings, {} clusters holding {clustered}, largest in {largest} tools",
        findings.len(),
        clusters.len()
    );
    // The three secret_scanning_delegated_* fields GitHub added to the
    // repository's security_and_analysis reach 67 operations.
    assert!(largest >= 60, "largest cluster in {largest} tools");
    assert!(
        clustered * 4 >= findings.len() * 3,
        "{clustered} of {}",
        findings.len()
    );

    let text = run_long(sb, &["diff", &old, &new]);
    text.drift();
    let lines = text.stdout.lines().count();
    eprintln!("github 22 -> 23: text report {lines} lines");
    assert!(text.stdout.contains("\nsummary:\n"), "summary first");
    assert!(text.stdout.contains("\nrepeated changes:\n"));
    assert!(text
        .stdout
        .contains("-v shows all, --format json writes every finding"));
    assert!(lines < 2_000, "{lines} lines");

    let md = run_long(sb, &["diff", &old, &new, "--format", "markdown"]);
    md.drift();
    let chars = md.stdout.chars().count();
    eprintln!("github 22 -> 23: Markdown report {chars} characters");
    assert!(
        chars <= 60_000,
        "{chars} characters do not fit a pull-request comment"
    );
    assert!(md.stdout.contains("left out to fit a comment"));
    assert!(md.stdout.contains("#### Repeated changes"));
}

#[test]
fn diff_and_fingerprint_read_openapi_documents_directly() {
    let sb = Sandbox::new();
    sb.write("old.yaml", PETS_YAML);
    sb.write("new.yaml", PETS_YAML.replace("default: 20", "default: 50"));
    sb.write("same.json", pets_json());
    let run = sb.run(&["diff", "old.yaml", "new.yaml", "--color", "never"]);
    run.drift();
    assert!(
        run.stdout
            .starts_with("drift: 0 added, 0 removed, 1 changed (1 finding)\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("new/listPets\n  high      input-default-changed  /inputSchema/properties/limit/default"),
        "{}",
        run.stdout
    );
    // YAML and JSON forms of one document: the same catalog.
    sb.run(&["diff", "old.yaml", "same.json"]).ok();
    let a = sb.run(&["fingerprint", "old.yaml"]);
    a.ok();
    assert_eq!(a.stdout, sb.run(&["fingerprint", "same.json"]).stdout);
    // A broken tool file keeps its own error; a broken YAML document its.
    sb.write("broken.json", "{\"tools\": [,]}");
    let message = sb
        .run(&["fingerprint", "broken.json"])
        .error(&["invalid JSON"]);
    assert_eq!(located(&message, "broken.json"), (1, 12));
    sb.write("broken.yaml", "openapi: 3.1.0\npaths: [\n");
    sb.run(&["fingerprint", "broken.yaml"])
        .error(&["broken.yaml:3:1: invalid YAML"]);
}

#[test]
fn many_warnings_are_counted_not_all_printed() {
    let paths: serde_json::Map<String, Value> = (0..30)
        .map(|i| {
            (
                format!("/p{i:02}"),
                json!({"get": {"operationId": "same", "responses": {}}}),
            )
        })
        .collect();
    let sb = pets("");
    sb.write(
        "api.yaml",
        json!({"openapi": "3.1.0", "paths": paths}).to_string(),
    );
    let run = sb.run(&["lock"]);
    run.ok();
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 22, "{}", run.stderr);
    assert_eq!(
        lines[20],
        "warning: server \"pets\": 9 more warnings not shown"
    );
    assert!(lines[21].starts_with("Pinned 30 tools"));
}

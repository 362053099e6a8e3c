//! What comes back from upstream: messages relayed to the agent, tool
//! results checked against their pinned output schema, and a recapture
//! when an upstream says its tools changed.

use super::*;
use toolpin_manifest::wire::event;

impl Session {
    pub(super) fn on_upstream_message(
        self: &Arc<Self>,
        server: String,
        mut message: Value,
        related: Option<Value>,
    ) {
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let id = message.get("id").cloned();
        if let Some(original) = id {
            // A server's request to the agent (sampling, elicitation, roots,
            // ping): an id of the proxy's, mapped back on the answer.
            let n = self.next_client_request.fetch_add(1, Ordering::Relaxed);
            let front_id = json!(format!("toolpin-{n}"));
            if let Ok(mut m) = self.client_requests.lock() {
                m.insert(id_key(&front_id), (server, original));
            }
            message["id"] = front_id;
            self.send_related(message, related);
            return;
        }
        match method.as_str() {
            "notifications/tools/list_changed" => {
                // One listing at a time per server; notifications that
                // arrive meanwhile make one more round.
                let start = match self.recapturing.lock() {
                    Ok(mut r) => match r.get_mut(&server) {
                        Some(again) => {
                            *again = true;
                            false
                        }
                        None => {
                            r.insert(server.clone(), false);
                            true
                        }
                    },
                    Err(_) => false,
                };
                if start {
                    let me = Arc::clone(self);
                    tokio::spawn(async move {
                        loop {
                            me.recapture(&server).await;
                            let again = me.recapturing.lock().ok().map(|mut r| {
                                let again = r.get(&server).copied().unwrap_or(false);
                                if again {
                                    r.insert(server.clone(), false);
                                } else {
                                    r.remove(&server);
                                }
                                again
                            });
                            if again != Some(true) {
                                return;
                            }
                        }
                    });
                }
            }
            "notifications/cancelled" => {
                // The server gave up on one of its requests to the agent.
                let Some(request) = message.pointer("/params/requestId").cloned() else {
                    return;
                };
                let front = self.client_requests.lock().ok().and_then(|mut m| {
                    let key = m
                        .iter()
                        .find(|(_, (s, orig))| *s == server && *orig == request)
                        .map(|(k, _)| k.clone())?;
                    m.remove(&key);
                    serde_json::from_str::<Value>(&key).ok()
                });
                if let Some(front) = front {
                    message["params"]["requestId"] = front;
                    self.send(message);
                }
            }
            _ => self.send_related(message, related),
        }
    }

    /// Checks a `tools/call` result against the pinned outputSchema, and
    /// counts it; returns the error class and `error.type` of a failed
    /// call. The error type is the convention's: the JSON-RPC error code
    /// (`_OTHER` without one), or `tool_error` for a result with `isError`.
    pub(super) fn check_result(
        &self,
        name: &str,
        route: &Route,
        reply: &Reply,
        started: Instant,
    ) -> Option<(ErrorClass, std::borrow::Cow<'static, str>)> {
        let seconds = started.elapsed().as_secs_f64();
        let catalog = self.proxy.catalog_hex.as_str();
        let error: Option<(ErrorClass, std::borrow::Cow<'static, str>)> = if reply.error().is_some()
        {
            let (code, message) = reply.error_code_message().unwrap_or((None, String::new()));
            let error_type = match code {
                Some(c) => c.to_string().into(),
                None => crate::metrics::OTHER_ERROR_TYPE.into(),
            };
            Some((ErrorClass::of_upstream(code, &message), error_type))
        } else if reply.is_error() {
            Some((
                ErrorClass::of_upstream(None, &reply.first_text()),
                "tool_error".into(),
            ))
        } else {
            None
        };
        if let Some((class, error_type)) = &error {
            self.proxy
                .metrics
                .call_as(&route.server, name, seconds, Some((*class, error_type)));
            return error;
        }
        self.proxy.metrics.call(&route.server, name, seconds, None);
        let (Some(validator), Some(structured)) = (&route.output, reply.structured_content())
        else {
            return None;
        };
        // Parsed only when a pinned outputSchema has something to say.
        let Ok(structured) = serde_json::from_str::<Value>(structured) else {
            return None;
        };
        for v in validator.validate(&structured) {
            let rule = match v.kind {
                ViolationKind::UnknownEnumValue { .. } => {
                    toolpin_drift::rules::RESULT_UNKNOWN_ENUM_VALUE.id
                }
                ViolationKind::LimitExceeded => continue,
                ViolationKind::Nonconformant => toolpin_drift::rules::RESULT_NONCONFORMANT.id,
            };
            self.proxy.metrics.finding(rule);
            self.proxy.events.emit(
                event::FINDING,
                json!({"rule": rule, "where": "result", "server": route.server, "tool": name, "pointer": v.pointer, "message": v.message, "catalog": catalog}),
            );
        }
        None
    }

    /// On `notifications/tools/list_changed`: lists the server's tools
    /// again over this session and applies the drift policy.
    pub(super) async fn recapture(self: &Arc<Self>, server: &str) {
        let Some(spec) = self.spec(server) else {
            return;
        };
        let upstream = self.upstreams.lock().await.get(server).cloned();
        let Some(upstream) = upstream else { return };
        let mut builder = PinBuilder::new(spec.transform.clone());
        let mut cursor: Option<Value> = None;
        let mut seen = std::collections::HashSet::new();
        let timeout = spec.options.timeouts.page;
        for _ in 0..spec.options.max_pages.max(1) {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let page = match upstream.call("tools/list", params, timeout).await {
                Ok(p) => p,
                // The agent went away meanwhile: nothing to compare for.
                Err(_) if upstream.is_shutting_down() => return,
                Err(e) => {
                    self.proxy.events.emit(
                        event::RECAPTURE_FAILED,
                        json!({"server": server, "message": e}),
                    );
                    return;
                }
            };
            for tool in page
                .get("tools")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
            {
                if let Err(e) = builder.push(tool) {
                    self.proxy.events.emit(
                        event::RECAPTURE_FAILED,
                        json!({"server": server, "message": e.to_string()}),
                    );
                    return;
                }
            }
            match page.get("nextCursor") {
                Some(c) if !c.is_null() && seen.insert(c.to_string()) => cursor = Some(c.clone()),
                _ => break,
            }
        }
        let pinned = self.proxy.settings.catalog.servers.get(server);
        let source = pinned.map(|p| p.source.clone()).unwrap_or(Value::Null);
        // The instructions this session was opened with, pinned with the
        // tools (a server's instructions are part of what drifts).
        let instructions = upstream
            .opened
            .result
            .get("instructions")
            .and_then(Value::as_str)
            .map(str::to_string);
        let mut live = builder
            .finish(source, "mcp", None)
            .with_instructions(instructions);
        // Compared as `lock` pinned it: with the secrets it echoes redacted.
        live.redact(&self.proxy.settings.credentials);
        let failures = self.proxy.apply_drift(server, &live);
        for f in failures {
            self.proxy
                .events
                .emit(event::DRIFT_FAIL, json!({"server": server, "message": f}));
        }
    }
}

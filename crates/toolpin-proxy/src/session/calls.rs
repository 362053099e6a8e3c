//! `tools/call`: the checks a call must pass before it is relayed (a
//! served tool, not blocked by drift, with valid arguments), and the one
//! way a refused call is answered.

use super::*;
use toolpin_manifest::wire::event;

/// Why a call is refused, and what the agent is answered.
struct Refusal {
    /// The tool's route, when the tool is served.
    route: Option<Arc<Route>>,
    rule: String,
    code: i64,
    text: String,
    /// The error's `data`.
    data: Option<Value>,
}

impl Refusal {
    /// Arguments that do not fit the tool's schema.
    fn arguments(route: &Arc<Route>, text: String) -> Refusal {
        Refusal {
            route: Some(Arc::clone(route)),
            rule: crate::refusal::INVALID_ARGUMENTS.to_string(),
            code: INVALID_PARAMS,
            text,
            data: None,
        }
    }
}

impl Session {
    pub(super) async fn call_tool(self: &Arc<Self>, id: Value, mut message: Value) {
        // The message is reshaped in place: no copy of the arguments.
        let mut params = match message.get_mut("params").map(Value::take) {
            Some(Value::Object(p)) => p,
            _ => Map::new(),
        };
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let arguments = params.remove("arguments").unwrap_or(Value::Null);
        let meta = params.get("_meta");
        let Some((route, upstream_args)) = self.admit(&id, &name, arguments, || meta.cloned())
        else {
            return;
        };
        params.insert("name".into(), json!(route.upstream_name));
        params.insert("arguments".into(), upstream_args);
        message["params"] = Value::Object(params);
        let server = route.server.clone();
        self.forward(&server, id, Outbound::Tree(message), Some((name, route)))
            .await;
    }

    /// A `tools/call` as the agent wrote it: checked like any other, and
    /// relayed as text unless the facade reshapes its arguments.
    pub(super) async fn call_tool_text(self: &Arc<Self>, call: Call) {
        let id = call.id();
        // The scanner checked the message, so this parse does not fail; if
        // it did, the arguments would not go unchecked.
        let arguments = match call.arguments().map(serde_json::from_str::<Value>) {
            None => Value::Null,
            Some(Ok(arguments)) => arguments,
            Some(Err(e)) => {
                return self.send(error_response(
                    &id,
                    PARSE_ERROR,
                    format!("parse error: {e}"),
                    None,
                ));
            }
        };
        let name = call.name().to_string();
        let Some((route, upstream_args)) = self.admit(&id, &name, arguments, || call.meta()) else {
            return;
        };
        let server = route.server.clone();
        self.forward(
            &server,
            id,
            Outbound::Call(call, upstream_args),
            Some((name, route)),
        )
        .await;
    }

    /// The checks every call goes through: a tool that is served, not
    /// blocked by drift, with valid arguments. Returns its route and the
    /// arguments in the upstream's shape, or `None` when the agent has
    /// been answered already. A refusal gets a span (when spans are
    /// exported) with the rule as its `error.type`; `meta` gives the
    /// request's `_meta` for its trace context, read only then.
    fn admit(
        &self,
        id: &Value,
        name: &str,
        arguments: Value,
        meta: impl FnOnce() -> Option<Value>,
    ) -> Option<(Arc<Route>, Value)> {
        let admitted = self.route_for(name).and_then(|route| {
            let upstream_args = route.to_upstream(arguments).map_err(|e| {
                Refusal::arguments(&route, format!("invalid arguments for tool {name:?}: {e}"))
            })?;
            self.proxy
                .metrics
                .arguments(name, &route.input_schema, &upstream_args);
            self.check_arguments(name, &route, &upstream_args)?;
            Ok((route, upstream_args))
        });
        match admitted {
            Ok(ok) => Some(ok),
            Err(refusal) => {
                self.refuse(id, name, meta, refusal);
                None
            }
        }
    }

    /// The route of a served tool that drift does not block.
    fn route_for(&self, name: &str) -> Result<Arc<Route>, Refusal> {
        let served = self.proxy.served();
        let catalog = self.proxy.catalog_hex.as_str();
        let Some(tool) = served.tools.get(name) else {
            let (rule, text) = match served.withdrawn_names.get(name) {
                Some(reason) => (
                    crate::refusal::TOOL_WITHDRAWN,
                    format!("tool {name:?} is withdrawn ({reason})"),
                ),
                None => (
                    toolpin_drift::rules::UNKNOWN_TOOL_CALLED.id,
                    format!("unknown tool {name:?}: it is not in the pinned catalog"),
                ),
            };
            self.proxy.events.emit(
                event::REFUSED,
                json!({"rule": rule, "tool": name, "message": text, "catalog": catalog}),
            );
            return Err(Refusal {
                route: None,
                rule: rule.to_string(),
                code: INVALID_PARAMS,
                data: Some(json!({"toolpin": {"rule": rule, "catalog": catalog}})),
                text,
            });
        };
        let route = Arc::clone(&tool.route);
        let Some(blocked) = &route.blocked else {
            return Ok(route);
        };
        let text = format!(
            "tool {name:?} cannot be called: it changed upstream ({}: {}); the pinned definition is kept until the change is reviewed",
            blocked.rule, blocked.message
        );
        self.proxy.events.emit(
            event::REFUSED,
            json!({"rule": blocked.rule, "server": route.server, "tool": name, "message": text, "catalog": catalog}),
        );
        if let Some(record) = &self.proxy.settings.record {
            record.refused(&crate::record::RuntimeRefusal {
                environment: &self.proxy.settings.catalog.environment,
                server: &route.server,
                tool: &route.pinned_name,
                pinned: &route.fingerprint.to_string(),
                live: blocked.live.as_deref(),
                rule: &blocked.rule,
                severity: blocked.severity,
                message: &blocked.message,
            });
        }
        Err(Refusal {
            rule: blocked.rule.clone(),
            code: INTERNAL_ERROR,
            data: Some(json!({"toolpin": {"rule": blocked.rule, "catalog": catalog}})),
            text,
            route: Some(Arc::clone(&route)),
        })
    }

    /// Validates the arguments (unless validation is off): unknown enum
    /// values are findings, and with validation enforced any violation
    /// refuses the call. A schema too costly to check in full is not held
    /// against the call.
    fn check_arguments(&self, name: &str, route: &Arc<Route>, args: &Value) -> Result<(), Refusal> {
        let validation = self.proxy.settings.validation;
        if validation == crate::Validation::Off {
            return Ok(());
        }
        let violations: Vec<_> = route
            .input
            .validate(args)
            .into_iter()
            .filter(|v| v.kind != ViolationKind::LimitExceeded)
            .collect();
        let catalog = self.proxy.catalog_hex.as_str();
        let unknown_enum = toolpin_drift::rules::RESULT_UNKNOWN_ENUM_VALUE.id;
        for v in &violations {
            if let ViolationKind::UnknownEnumValue { .. } = v.kind {
                self.proxy.events.emit(
                    event::FINDING,
                    json!({"rule": unknown_enum, "where": "arguments", "server": route.server, "tool": name, "pointer": v.pointer, "message": v.message, "catalog": catalog}),
                );
                self.proxy.metrics.finding(unknown_enum);
                self.proxy
                    .metrics
                    .unknown_enum_value(&route.server, name, &v.pointer);
            }
        }
        if violations.is_empty() {
            return Ok(());
        }
        let summary: Vec<&str> = violations
            .iter()
            .take(5)
            .map(|v| v.message.as_str())
            .collect();
        let text = format!(
            "invalid arguments for tool {name:?}: {}",
            summary.join("; ")
        );
        let enforced = validation == crate::Validation::Enforce;
        self.proxy.events.emit(
            event::INVALID_ARGUMENTS,
            json!({"server": route.server, "tool": name, "message": text, "enforced": enforced}),
        );
        if enforced {
            return Err(Refusal::arguments(route, text));
        }
        Ok(())
    }

    /// Answers a refused call: counted, spanned (when spans are exported)
    /// with the rule as its `error.type`, and the agent told.
    fn refuse(&self, id: &Value, name: &str, meta: impl FnOnce() -> Option<Value>, r: Refusal) {
        let route = r.route.as_deref();
        self.proxy
            .metrics
            .refused(route.map_or("", |r| r.server.as_str()), name, &r.rule);
        self.refused_span(id, name, route, meta, &r.rule, r.code, &r.text);
        self.send(error_response(id, r.code, r.text, r.data));
    }

    /// The span of a call refused before it went upstream: `rule` is its
    /// `error.type`, `code` the JSON-RPC error the agent is answered with.
    #[allow(clippy::too_many_arguments)]
    fn refused_span(
        &self,
        id: &Value,
        name: &str,
        route: Option<&Route>,
        meta: impl FnOnce() -> Option<Value>,
        rule: &str,
        code: i64,
        message: &str,
    ) {
        if !self.proxy.telemetry.enabled() {
            return;
        }
        let meta = meta();
        let fingerprint = route.map(|r| r.fingerprint.to_hex());
        let route = route.zip(fingerprint.as_deref());
        let Some(span) = self.span(id, name, route, meta.as_ref()) else {
            return;
        };
        let message = self.proxy.settings.redactor.redact(message);
        span.finish(Some(crate::telemetry::Failure {
            error_type: rule,
            status_code: Some(code),
            class: ErrorClass::Validation.name(),
            message: &message,
        }));
    }
}

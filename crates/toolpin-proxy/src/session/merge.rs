//! Requests answered from every upstream: broadcast, merged lists, and
//! which upstream owns an item a later request names.

use super::*;

fn offers(u: &Upstream, capability: &str) -> bool {
    u.opened
        .capabilities
        .as_ref()
        .is_none_or(|c| c.get(capability).is_some())
}

impl Session {
    /// Every upstream that offers `capability`, reached now; `None` when
    /// the agent was answered with the failure.
    async fn offering(
        self: &Arc<Self>,
        id: &Value,
        capability: &str,
    ) -> Option<Vec<Arc<Upstream>>> {
        match self.connect_all().await {
            Ok(upstreams) => Some(
                upstreams
                    .into_iter()
                    .filter(|u| offers(u, capability))
                    .collect(),
            ),
            Err(e) => {
                self.send(error_response(id, INTERNAL_ERROR, e, None));
                None
            }
        }
    }

    /// `logging/setLevel`: to every upstream that offers `capability`.
    pub(super) async fn broadcast_request(
        self: &Arc<Self>,
        id: Value,
        message: Value,
        capability: &str,
    ) {
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let params = message.get("params").cloned().unwrap_or(json!({}));
        let Some(targets) = self.offering(&id, capability).await else {
            return;
        };
        if targets.len() == 1 {
            let server = targets[0].name.clone();
            return self
                .forward(&server, id, Outbound::Tree(message), None)
                .await;
        }
        let timeout = self.proxy.settings.call_timeout;
        for u in &targets {
            if let Err(e) = u.call(&method, params.clone(), timeout).await {
                return self.send(error_response(
                    &id,
                    INTERNAL_ERROR,
                    format!("upstream {}: {e}", u.name),
                    None,
                ));
            }
        }
        self.send(result_response(&id, json!({})));
    }

    /// `resources/list`, `resources/templates/list`, `prompts/list`: one
    /// upstream's answer relayed, or every upstream's merged.
    pub(super) async fn list_merged(self: &Arc<Self>, id: Value, message: Value, method: &str) {
        let (capability, key) = match method {
            "prompts/list" => ("prompts", "prompts"),
            "resources/templates/list" => ("resources", "resourceTemplates"),
            _ => ("resources", "resources"),
        };
        let Some(targets) = self.offering(&id, capability).await else {
            return;
        };
        match targets.as_slice() {
            [] => self.send(error_response(
                &id,
                METHOD_NOT_FOUND,
                format!("no upstream serves {method}"),
                None,
            )),
            [one] => {
                let server = one.name.clone();
                self.forward(&server, id, Outbound::Tree(message), None)
                    .await
            }
            many => {
                let params = message.get("params").cloned().unwrap_or(json!({}));
                let timeout = self.proxy.settings.call_timeout;
                let mut merged = Vec::new();
                for u in many {
                    match u.call(method, params.clone(), timeout).await {
                        Ok(result) => {
                            for item in result
                                .get(key)
                                .and_then(Value::as_array)
                                .cloned()
                                .unwrap_or_default()
                            {
                                self.learn_owner(&u.name, method, &item);
                                merged.push(item);
                            }
                        }
                        Err(e) => {
                            return self.send(error_response(
                                &id,
                                INTERNAL_ERROR,
                                format!("upstream {}: {e}", u.name),
                                None,
                            ))
                        }
                    }
                }
                self.send(result_response(&id, json!({ key: merged })));
            }
        }
    }

    pub(super) fn learn_owner(&self, server: &str, method: &str, item: &Value) {
        let (map, field) = match method {
            "prompts/list" => (&self.prompt_owner, "name"),
            "resources/templates/list" => (&self.resource_owner, "uriTemplate"),
            _ => (&self.resource_owner, "uri"),
        };
        if let (Some(k), Ok(mut m)) = (item.get(field).and_then(Value::as_str), map.lock()) {
            m.insert(k.to_string(), server.to_string());
        }
    }

    /// Which upstream serves a request other than the ones handled above:
    /// the only one; else by the resource URI or prompt name it names;
    /// else the first that offers the capability; else the first.
    pub(super) async fn owner_of(&self, method: &str, params: &Value) -> Option<String> {
        let all = &self.proxy.settings.upstreams;
        if all.len() <= 1 {
            return all.first().map(|u| u.name.clone());
        }
        let by_uri = |uri: &str| self.resource_owner.lock().ok()?.get(uri).cloned();
        let by_prompt = |name: &str| self.prompt_owner.lock().ok()?.get(name).cloned();
        let known = match method {
            m if m.starts_with("resources/") => {
                params.get("uri").and_then(Value::as_str).and_then(by_uri)
            }
            "prompts/get" => params
                .get("name")
                .and_then(Value::as_str)
                .and_then(by_prompt),
            "completion/complete" => {
                let r = params.get("ref");
                match r.and_then(|r| r.get("type")).and_then(Value::as_str) {
                    Some("ref/prompt") => r
                        .and_then(|r| r.get("name"))
                        .and_then(Value::as_str)
                        .and_then(by_prompt),
                    _ => r
                        .and_then(|r| r.get("uri"))
                        .and_then(Value::as_str)
                        .and_then(by_uri),
                }
            }
            _ => None,
        };
        if known.is_some() {
            return known;
        }
        let capability = method.split('/').next().unwrap_or("");
        let upstreams = self.upstreams.lock().await;
        upstreams
            .values()
            .find(|u| offers(u, capability))
            .map(|u| u.name.clone())
            .or_else(|| all.first().map(|u| u.name.clone()))
    }
}

// A mock agent as a promptfoo custom provider (file://provider.js), so the
// suite runs offline: it answers each test from its vars, and returns the
// tool calls it "made" the way promptfoo's own OpenAI provider does (the
// message's `tool_calls`, OpenAI-style), with a token usage and a cost.
// crates/toolpin-evals/tests/readers.rs runs it for real.

class MockAgent {
  constructor(options) {
    this.providerId = (options && options.id) || 'mock-agent';
  }

  id() {
    return this.providerId;
  }

  async callApi(prompt, context) {
    const vars = (context && context.vars) || {};
    const usage = { prompt: 120, completion: 30, total: 150 };
    const call = (name, args) => ({
      id: `call_${name}`,
      type: 'function',
      function: { name, arguments: JSON.stringify(args) },
    });
    switch (vars.task) {
      case 'refund':
        // Only tool calls: promptfoo's OpenAI provider returns the
        // `tool_calls` array itself as the output.
        return {
          output: [
            call('orders__lookup_order', { order_id: vars.order }),
            call('payments__refund', { order_id: vars.order }),
          ],
          tokenUsage: usage,
          cost: 0.002,
        };
      case 'weather':
        // Text and tool calls: the whole message is the output.
        return {
          output: {
            role: 'assistant',
            content: `Looking up the weather in ${vars.city}.`,
            tool_calls: [call('weather__forecast', { city: vars.city })],
          },
          tokenUsage: usage,
          cost: 0.001,
        };
      case 'broken':
        return { error: 'upstream agent crashed' };
      default:
        return { output: `Hello, ${vars.name || 'you'}!`, tokenUsage: usage, cost: 0.0005 };
    }
  }
}

module.exports = MockAgent;

// The Vercel AI SDK: generateText with two tools (zod schemas) on the
// OpenAI provider, which sends them to the Responses API; then streamText.
import { generateText, streamText, tool } from "ai";
import { openai } from "@ai-sdk/openai";
import { z } from "zod";

// The provider reads OPENAI_BASE_URL and OPENAI_API_KEY itself.
const tools = {
  weather: tool({
    description: "The weather in a city.",
    inputSchema: z.object({ city: z.string().describe("The city's name.") }),
    execute: async () => "sunny",
  }),
  convert: tool({
    description: "Convert an amount between currencies.",
    inputSchema: z.object({ amount: z.number().min(0), to: z.enum(["EUR", "USD"]) }),
    execute: async () => 1,
  }),
};
const first = await generateText({ model: openai("gpt-4.1-mini"), tools, prompt: "Weather in Oslo?" });
if (!first.text) throw new Error("no final text");
const second = streamText({ model: openai("gpt-4.1-mini"), tools, prompt: "Weather in Oslo?" });
if (!(await second.text)) throw new Error("no streamed text");

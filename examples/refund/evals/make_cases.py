#!/usr/bin/env python3
"""Writes cases.json, the refund eval's dataset (run it again only to change
the dataset on purpose; the file is committed and the agent reads only it).

Deterministic: a fixed seed, so running it again writes the same bytes.

Each case is one customer asking for a refund. It holds what the customer
says (`message`, `email`), the store the simulated backend answers from
(`orders`: the customer's order history, newest first) and what a correct
agent refunds (`expected`). `tags` say which group the case was drawn from;
only people read them (the agent and the scorer never do).
"""

import json
import os
import random

SEED = 20261129

PRODUCTS = [
    "ceramic mug", "blue kettle", "linen apron", "oak cutting board",
    "steel whisk", "storage jar", "cotton towel", "bamboo spatula",
    "cast-iron pan", "salad bowl", "chef's knife", "pepper mill",
    "tea strainer", "wine glass", "butter dish", "bread tin",
    "measuring cups", "oven mitt", "cheese grater", "water bottle",
    "lunch box", "cake stand", "rolling pin", "soup ladle", "egg timer",
    "table runner", "espresso cup", "fruit basket",
]

NAMES = [
    "ana.ruiz", "ben.okafor", "chloe.martin", "dev.patel", "emma.larsen",
    "farid.haddad", "grace.kim", "hugo.silva", "ines.moreau", "jon.berg",
    "kara.nowak", "liam.byrne", "maya.cohen", "nils.eriksen", "olga.ivanova",
    "pablo.vega", "quinn.adams", "rosa.bianchi", "sam.taylor", "tara.singh",
    "uma.rao", "victor.hugo", "wen.li", "ximena.lopez", "yusuf.demir",
    "zoe.clarke",
]

# (reason, phrases that say it). The messages use them; the agent has its own
# idea of which words point at which reason (agent.py, REASON_CUES).
CUES = {
    "damaged": ["arrived broken", "came cracked", "was smashed in the box", "arrived badly dented", "is damaged"],
    "late": ["arrived two weeks late", "came long after the promised date", "was delayed by three weeks"],
    "wrong_item": ["is the wrong item", "is not what I ordered", "was the wrong colour"],
    "other": ["is no longer needed", "was a duplicate purchase by mistake"],
}
# Ambiguous complaints: a main reason said twice, a second one said once.
AMBIGUOUS = [
    ("damaged", "late", "arrived broken and the glaze is damaged, and it was late too"),
    ("wrong_item", "damaged", "is the wrong item and not what I ordered; the box was a bit damaged"),
    ("late", "damaged", "arrived two weeks late, well after the promised date, and one corner was broken"),
    ("damaged", "wrong_item", "came cracked and is damaged all over; it may even be the wrong item"),
    ("wrong_item", "late", "was the wrong colour, not what I ordered, and it was late"),
    ("damaged", "late", "was smashed in the box and the handle is damaged; delivery was late as well"),
]

OPENERS = ["Hi,", "Hello,", "Hey there,", "Good morning,", "Hi team,"]
ASKS = [
    "Can I get a refund?", "Please refund me.", "I'd like my money back.",
    "Could you refund that?", "What can you do?",
]

# (group, count, cart lengths to draw from)
GROUPS = [
    ("id-known", 30, [1, 1, 2, 2, 3, 3, 4, 5, 6, 7, 8]),
    ("id-known long-cart", 7, [9, 10, 11, 12]),
    ("id-known deep-history", 1, [8]),
    ("id-unknown", 10, [1, 2, 2, 3, 4, 5, 6]),
    ("id-unknown long-cart", 4, [9, 10, 11, 12]),
    ("id-known ambiguous", 6, [1, 2, 3, 4]),
    ("id-typo", 2, [2, 3, 4]),
]


def main():
    rng = random.Random(SEED)
    used_ids = set()
    used_emails = {}

    def new_order_id():
        while True:
            oid = f"ORD-{rng.randint(1000, 9999)}"
            if oid not in used_ids:
                used_ids.add(oid)
                return oid

    def new_email():
        name = rng.choice(NAMES)
        used_emails[name] = used_emails.get(name, 0) + 1
        n = used_emails[name]
        return f"{name}{'' if n == 1 else n}@example.com"

    def make_order(n_items, day):
        oid = new_order_id()
        titles = rng.sample(PRODUCTS, n_items)
        items = []
        for i, title in enumerate(titles, 1):
            items.append({
                "line_id": f"{oid}-{i:02d}",
                "sku": f"SKU-{rng.randint(10000, 99999)}",
                "title": title,
                "price_cents": rng.randrange(399, 8999, 10),
                "qty": 1 if rng.random() < 0.8 else 2,
            })
        return {
            "order_id": oid,
            "placed_on": f"2026-{8 + day // 28:02d}-{1 + day % 28:02d}",
            "status": "delivered",
            "items": items,
        }

    drafts = []
    for group, count, lengths in GROUPS:
        for k in range(count):
            drafts.append((group, rng.choice(lengths) if group != "id-known long-cart" else lengths[k % len(lengths)]))
    rng.shuffle(drafts)

    cases = []
    for n, (group, cart) in enumerate(drafts, 1):
        email = new_email()
        # The customer's history, newest first; the order in question is one
        # of them. A deep history puts ~45 order lines before it.
        if "deep-history" in group:
            newer = [rng.randint(3, 6) for _ in range(11)]
            while sum(newer) < 44:
                newer.append(rng.randint(1, 3))
        else:
            newer = [rng.randint(1, 4) for _ in range(rng.randint(0, 3))]
        older = [rng.randint(1, 4) for _ in range(rng.randint(0, 3))]
        sizes = newer + [cart] + older
        days = sorted(rng.sample(range(0, 110), len(sizes)), reverse=True)
        orders = [make_order(s, d) for s, d in zip(sizes, days)]
        target = orders[len(newer)]
        target["status"] = "delivered"

        # What the customer complains about.
        if "ambiguous" in group:
            reason, _second, cue = rng.choice(AMBIGUOUS)
        else:
            reason = rng.choices(["damaged", "late", "wrong_item", "other"], [5, 2, 3, 1])[0]
            cue = rng.choice(CUES[reason])
        whole = reason == "late" or (cart > 1 and rng.random() < 0.25)
        if whole:
            named = target["items"]
            what = "my whole order" if rng.random() < 0.5 else "everything in the order"
            item_words = "everything"
        else:
            named = rng.sample(target["items"], rng.randint(1, min(2, cart)))
            named.sort(key=lambda it: it["line_id"])
            item_words = " and the ".join(it["title"] for it in named)
            what = None
        amount = sum(it["price_cents"] * it["qty"] for it in named)

        if "typo" in group:
            digits = target["order_id"][4:]
            wrong = target["order_id"]
            i = 0
            while wrong in used_ids:
                swapped = list(digits)
                swapped[i], swapped[i + 1] = swapped[i + 1], swapped[i]
                wrong = "ORD-" + "".join(swapped)
                i += 1
                if i == 3:
                    wrong = f"ORD-{rng.randint(1000, 9999)}"
                    i = 0
            ref = f"order {wrong} (I placed it on {target['placed_on']})"
        elif "unknown" in group:
            ref = f"the order I placed on {target['placed_on']}"
        else:
            ref = f"order {target['order_id']}"

        subject = "The " + item_words if not whole else "The whole order"
        if whole and reason != "late":
            body = f"About {ref}: {subject.lower().replace('the whole order', 'the order')} {cue}. Please refund {what}."
        elif whole:
            body = f"About {ref}: it {cue}. I want a refund for {what}."
        else:
            verb_cue = cue
            body = f"About {ref}: the {item_words} {verb_cue}. {rng.choice(ASKS)}"
        message = f"{rng.choice(OPENERS)} {body}"

        cases.append({
            "id": f"refund-{n:03d}",
            "tags": group.split(),
            "email": email,
            "message": message,
            "expected": {"order_id": target["order_id"], "amount_cents": amount, "reason": reason},
            "orders": orders,
        })

    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "cases.json"), "w") as f:
        json.dump({"version": 1, "cases": cases}, f, indent=1)
        f.write("\n")
    print(f"wrote {len(cases)} cases")


if __name__ == "__main__":
    main()

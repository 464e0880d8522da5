"""Generate station_log.txt, the sample document of the README's main command (deterministic, seed 7).

A year of daily logs from a fictional research station: weather readings, routine notes, and a handful of
facts buried deep inside (a sensor failure, a supply delivery, a visitor), so questions have real answers
that can only be found by searching the document, never by guessing.
"""

import random
from pathlib import Path

SENSORS = ["anemometer A2", "hygrometer H1", "barometer B3", "thermistor T4", "pyranometer P1"]
ROUTINE = [
    "Routine calibration of the {sensor} completed without findings.",
    "Snow cleared from the solar array; output back to nominal.",
    "Generator run for {hours} hours while the batteries were serviced.",
    "Radio check with the coastal relay at {time} UTC, signal clear.",
    "Inventory of the food store: no shortages.",
    "Wind picked up in the afternoon; all instruments secured.",
    "Weekly data upload to the archive finished in {minutes} minutes.",
]
FACTS = {
    117: "INCIDENT: the thermistor T4 failed at 03:40 UTC after reading -41.7 C; replaced with the spare T5.",
    203: "Supply delivery by the ship Aurora Borealis: 2,150 litres of fuel and 38 crates of food.",
    288: "Visitor: Dr. Ines Halvorsen arrived to audit the ice-core freezer, stayed four days.",
}


def main() -> None:
    rng = random.Random(7)
    lines = ["Kestrel Ridge Research Station: daily log, year 2031", ""]
    for day in range(1, 366):
        temperature = round(-25 + 20 * rng.random() - 10 * (day < 90 or day > 300), 1)
        lines.append(f"Day {day:03d}. Temperature {temperature} C, wind {rng.randint(0, 60)} km/h, "
                     f"pressure {rng.randint(960, 1040)} hPa.")
        for _ in range(rng.randint(6, 12)):
            template = rng.choice(ROUTINE)
            lines.append(template.format(sensor=rng.choice(SENSORS), hours=rng.randint(1, 9),
                                         time=f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}",
                                         minutes=rng.randint(3, 90)))
        if day in FACTS:
            lines.append(FACTS[day])
        lines.append("")
    Path(__file__).with_name("station_log.txt").write_text("\n".join(lines))


if __name__ == "__main__":
    main()

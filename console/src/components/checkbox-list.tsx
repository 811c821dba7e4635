import { useState } from 'react';

/** One entry of a catalogue offered as checkboxes (a permission, a webhook event): its name and what it means. */
export interface CheckboxOption<T extends string> {
  name: T;
  description: string;
}

/**
 * The names ticked in a checkbox list, and how to tick or untick one. The names stay in the catalogue's order,
 * whatever order they were ticked in: the order the form sends them in.
 */
export function useSelection<T extends string>(
  catalogue: ReadonlyArray<{ name: T }>,
  initial: readonly T[],
): [T[], (name: T, on: boolean) => void] {
  const [selected, setSelected] = useState<T[]>(() => [...initial]);
  const toggle = (name: T, on: boolean) =>
    setSelected((current) =>
      catalogue.map((entry) => entry.name).filter((entry) => (entry === name ? on : current.includes(entry))),
    );
  return [selected, toggle];
}

/** A checkbox per option, each labelled with its name and description, all sent under one form field name. */
export function CheckboxList<T extends string>({
  name,
  options,
  selected,
  onToggle,
}: {
  name: string;
  options: ReadonlyArray<CheckboxOption<T>>;
  selected: readonly T[];
  onToggle: (name: T, checked: boolean) => void;
}) {
  return (
    <ul className="checkboxes">
      {options.map((option) => (
        <li key={option.name}>
          <label>
            <input
              type="checkbox"
              name={name}
              value={option.name}
              checked={selected.includes(option.name)}
              onChange={(event) => onToggle(option.name, event.target.checked)}
            />
            <code>{option.name}</code> <span className="muted">{option.description}</span>
          </label>
        </li>
      ))}
    </ul>
  );
}
